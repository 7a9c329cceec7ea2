#pragma once
// The health check an orchestrator probes: `GET /healthz` answers 200 with
// {"status":"ok","redis":"up","functions":"ok",...} while Redis answers PING and has this build's
// functions library, and 503 with {"status":"unavailable","redis":"down","error":"..."} when Redis
// does not answer, or {"status":"unavailable","redis":"up","functions":"missing","error":"...",
// "hint":"run `baton init` ..."} when the library is gone (FUNCTION FLUSH, a restart without
// persistence) or another version.
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "baton/redis_options.h"
#include "baton/status.h"

namespace baton::batond {

struct HealthServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = any free port (see HealthServer::port())
  RedisOptions redis;
  std::chrono::milliseconds probe_timeout{1000};  // connect + PING + version check, per probe
  // Extra fields merged into every answer (instance, components); called on the server's threads.
  std::function<nlohmann::json()> details;
};

// Thread-safety: Stop() from any thread; the handlers run on the server's own threads.
class HealthServer {
 public:
  // Binds host:port and starts serving on a background thread. Fails with kInvalidArgument for a
  // bad redis_url and kUnavailable when the address cannot be bound.
  static StatusOr<std::unique_ptr<HealthServer>> Start(HealthServerOptions options);
  ~HealthServer();  // Stop()s
  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;

  // Stops accepting and joins the server thread. Idempotent.
  void Stop();
  // The bound port (the chosen one when options.port was 0).
  int port() const;

 private:
  struct Impl;
  explicit HealthServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Parses "host:port" (port 0..65535; "[::1]:8089" for IPv6). kInvalidArgument names `health`.
Status ParseListenAddress(const std::string& text, std::string* host, int* port);

}  // namespace baton::batond
