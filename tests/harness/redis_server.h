#pragma once
// A real redis-server for one test: its own free loopback port and data directory, no
// persistence, stopped and deleted when the object dies. No mock of Redis anywhere.
#include <hiredis/hiredis.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/process.h"

namespace baton::testing {

struct RedisReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, RedisReplyDeleter>;

class RedisServer {
 public:
  // Starts redis-server (from PATH) with `extra_args` appended, waits until it answers PING.
  explicit RedisServer(std::vector<std::string> extra_args = {});
  ~RedisServer();

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  const std::string& dir() const { return dir_.path(); }

  // Loads the Baton functions library (functions/*.lua) with FUNCTION LOAD REPLACE.
  void LoadFunctions();

  // Runs one command on a fresh-per-server helper connection; throws on connection errors.
  ReplyPtr Command(const std::vector<std::string>& argv);
  // Convenience: the reply as integer / string (throws when the type does not match).
  long long Integer(const std::vector<std::string>& argv);
  std::string String(const std::vector<std::string>& argv);
  // The error history of a task as the inspector reads it (internal::ReadErrorHistory over a new
  // connection; errors_key: baton:v2:{ns}:errors): a JSON array of its failures, oldest first,
  // empty when it has none. Throws when Redis cannot be read.
  nlohmann::json ErrorHistory(const std::string& errors_key, const std::string& id);

  void Kill();  // SIGKILL the server (to test connection loss).

 private:
  TempDir dir_;
  int port_ = 0;
  std::unique_ptr<Process> process_;
  redisContext* ctx_ = nullptr;
};

// The Baton functions library source as the build embedded it.
std::string FunctionLibrarySource();

// The protocol v1 library (contract/legacy/baton_v1.lua), for rolling-upgrade tests.
std::string LegacyV1LibrarySource();

}  // namespace baton::testing
