#pragma once
// A real PostgreSQL server for tests (Debian's postgresql package, /usr/lib/postgresql/<N>/bin):
// a fresh cluster in its own temporary directory (initdb, trust authentication, user `baton`),
// listening on a free loopback port with durability off (fsync, synchronous_commit and
// full_page_writes off), a database `baton`, stopped and deleted when the object dies. The system
// PostgreSQL service, if any, is never used.
#include <memory>
#include <string>

#include "harness/process.h"

namespace baton::testing {

class PostgresServer {
 public:
  // Creates the cluster, starts the server and waits until `baton` accepts connections. Throws
  // std::runtime_error (with the server's log) when it cannot.
  PostgresServer();
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  int port() const { return port_; }
  // A libpq connection URI for the `baton` database.
  std::string url() const {
    return "postgresql://baton@127.0.0.1:" + std::to_string(port_) + "/baton";
  }
  const std::string& dir() const { return dir_.path(); }
  // Creates a new empty database (its own name each call) and returns its URI: one server shared
  // by a test suite, one database per test.
  std::string NewDatabaseUrl();

  // SIGKILLs the server and its backends (to test connection loss).
  void Kill();

 private:
  void Stop(int first_signal);

  TempDir dir_;
  int port_ = 0;
  int databases_ = 0;
  std::unique_ptr<Process> process_;
};

}  // namespace baton::testing
