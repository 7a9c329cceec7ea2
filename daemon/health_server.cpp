#include "health_server.h"

#include <httplib.h>

#include <mutex>
#include <thread>

#include "broker/function_library.h"
#include "broker/redis_connection.h"

namespace baton::batond {

using internal::RedisConnection;
using internal::RedisEndpoint;
using internal::Reply;

struct HealthServer::Impl {
  HealthServerOptions options;
  RedisEndpoint endpoint;
  httplib::Server server;
  std::thread thread;
  int port = 0;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  // One probe connection shared by the handler threads (a probe is one PING).
  std::mutex probe_mu;
  std::unique_ptr<RedisConnection> probe;

  // OK when Redis answers PING within the probe timeout. *library: the functions library check
  // (FCALL_RO baton_v2_version), run when Redis answered.
  Status ProbeRedis(Status* library) {
    std::lock_guard<std::mutex> lock(probe_mu);
    if (probe && probe->broken()) probe.reset();
    if (!probe) {
      auto conn = RedisConnection::Open(endpoint, options.probe_timeout);
      if (!conn.ok()) return conn.status();
      probe = std::move(conn).value();
    }
    auto reply = probe->Command({"PING"});
    if (!reply.ok()) {
      probe.reset();  // reconnect on the next probe
      return reply.status();
    }
    if (reply->is_error()) return Status::Unavailable("PING: " + reply->str);
    // A Redis restarted without persistence, or FUNCTION FLUSH, loses the library: every call of
    // the promoter, the reaper and the workers fails until someone loads it again.
    *library = internal::CheckFunctionLibrary(*probe);
    if (library->code() == StatusCode::kUnavailable) {
      probe.reset();
      return *library;
    }
    return Status::Ok();
  }

  void HandleHealthz(httplib::Response& res) {
    nlohmann::json body = nlohmann::json::object();
    if (options.details) body = options.details();
    Status library = Status::Ok();
    Status redis = ProbeRedis(&library);
    const bool healthy = redis.ok() && library.ok();
    body["status"] = healthy ? "ok" : "unavailable";
    body["redis"] = redis.ok() ? "up" : "down";
    if (!redis.ok()) {
      body["error"] = redis.message();
    } else {
      body["functions"] = library.ok() ? "ok" : "missing";
      if (!library.ok()) {
        body["error"] = library.message();
        body["hint"] = "run `baton init` (or start batond with --load-functions)";
      }
    }
    body["uptime_s"] =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started)
            .count();
    res.status = healthy ? 200 : 503;
    res.set_header("Cache-Control", "no-store");
    res.set_content(body.dump(), "application/json");
  }
};

HealthServer::HealthServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HealthServer::~HealthServer() { Stop(); }

StatusOr<std::unique_ptr<HealthServer>> HealthServer::Start(HealthServerOptions options) {
  auto endpoint = RedisEndpoint::Parse(options.redis.url);
  if (!endpoint.ok()) return endpoint.status();
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->endpoint = *endpoint;
  // Two handler threads are plenty for probes (httplib's default pool is one per core).
  impl->server.new_task_queue = [] { return new httplib::ThreadPool(2); };
  impl->server.set_keep_alive_max_count(10);
  Impl* raw = impl.get();
  impl->server.Get("/healthz", [raw](const httplib::Request&, httplib::Response& res) {
    raw->HandleHealthz(res);
  });
  const std::string& host = impl->options.host;
  if (impl->options.port == 0) {
    impl->port = impl->server.bind_to_any_port(host);
    if (impl->port <= 0) return Status::Unavailable("health: cannot bind " + host + ":0");
  } else {
    if (!impl->server.bind_to_port(host, impl->options.port)) {
      return Status::Unavailable("health: cannot bind " + host + ":" +
                                 std::to_string(impl->options.port));
    }
    impl->port = impl->options.port;
  }
  impl->thread = std::thread([raw] { raw->server.listen_after_bind(); });
  // httplib's stop() is a no-op until the loop runs: wait for it so that Stop() cannot hang.
  for (int i = 0; i < 2000 && !impl->server.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::unique_ptr<HealthServer>(new HealthServer(std::move(impl)));
}

void HealthServer::Stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->server.stop();
  impl_->thread.join();
}

int HealthServer::port() const { return impl_->port; }

Status ParseListenAddress(const std::string& text, std::string* host, int* port) {
  auto bad = [&](const std::string& rule) {
    return Status::InvalidArgument("health", rule + " (got '" + text + "')");
  };
  std::string::size_type colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return bad("must be host:port");
  }
  std::string h = text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  const std::string digits = text.substr(colon + 1);
  if (digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos) {
    return bad("port must be a number 0..65535");
  }
  int p = std::stoi(digits);
  if (p > 65535) return bad("port must be a number 0..65535");
  *host = h;
  *port = p;
  return Status::Ok();
}

}  // namespace baton::batond
