#include "api_server.h"

#include <httplib.h>

#include <charconv>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "http_params.h"
#include "metrics.h"
#include "store_queries.h"

namespace baton::collector {
namespace {

using nlohmann::json;

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Reply(httplib::Response& res, const StatusOr<json>& body) {
  res.set_header("Cache-Control", "no-store");
  if (body.ok()) {
    res.status = 200;
    // Invalid UTF-8 in stored text (payload errors are untrusted) is replaced, never fatal.
    res.set_content(body->dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    return;
  }
  const Status& s = body.status();
  res.status = s.code() == StatusCode::kInvalidArgument ? 400
               : s.code() == StatusCode::kNotFound      ? 404
                                                        : 503;
  res.set_content(json{{"error", s.message()}}.dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json");
}

constexpr std::int64_t kMaxMs = 253402300799999;  // 9999-12-31

}  // namespace

struct ApiServer::Impl {
  std::string store_url;
  const CollectorStats& stats;
  httplib::Server server;
  std::thread thread;
  int port = 0;
  std::mutex db_mu;
  std::unique_ptr<SqlDatabase> db;

  Impl(std::string url, const CollectorStats& s) : store_url(std::move(url)), stats(s) {}

  // Runs `query` on the API's store connection, reopening it after a failure.
  template <typename F>
  auto WithStore(F query) -> decltype(query(std::declval<SqlDatabase&>())) {
    std::lock_guard<std::mutex> lock(db_mu);
    if (!db) {
      auto opened = OpenSqlDatabase(store_url);
      if (!opened.ok()) return opened.status();
      db = std::move(opened).value();
    }
    auto result = query(*db);
    if (!result.ok() && result.status().code() == StatusCode::kUnavailable) db.reset();
    return result;
  }

  void Routes() {
    // Healthy: the store answers and the ingest loop is connected to Redis.
    server.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
      auto probe = WithStore([](SqlDatabase& d) -> StatusOr<json> {
        auto rows = d.Query("SELECT COUNT(*) FROM baton_schema");
        if (!rows.ok()) return rows.status();
        return json::object();
      });
      const bool redis_up = stats.redis_up.load();
      json body = {{"store", probe.ok() ? "up" : "down"}, {"redis", redis_up ? "up" : "down"}};
      if (!probe.ok()) body["error"] = probe.status().message();
      const bool healthy = probe.ok() && redis_up;
      body["status"] = healthy ? "ok" : "unavailable";
      res.status = healthy ? 200 : 503;
      res.set_header("Cache-Control", "no-store");
      res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace),
                      "application/json");
    });
    server.Get("/api/overview", [this](const httplib::Request&, httplib::Response& res) {
      Reply(res, WithStore([](SqlDatabase& d) { return QueryOverview(d, NowMs()); }));
    });
    server.Get("/api/series", [this](const httplib::Request& req, httplib::Response& res) {
      auto ns = TextParam(req, "namespace");
      auto type = TextParam(req, "type");
      if (!ns || !type) {
        Reply(res, Status::InvalidArgument(!ns ? "namespace" : "type", "is required"));
        return;
      }
      auto from = IntParam(req, "from", 0, kMaxMs);
      auto to = IntParam(req, "to", 0, kMaxMs);
      if (!from.ok() || !to.ok()) {
        Reply(res, !from.ok() ? from.status() : to.status());
        return;
      }
      const std::int64_t to_ms = to->value_or(NowMs());
      const std::int64_t from_ms = from->value_or(to_ms - 3600000);
      if (from_ms > to_ms || to_ms - from_ms > 31LL * 86400000) {
        Reply(res, Status::InvalidArgument("from", "must be before to, at most 31 days apart"));
        return;
      }
      Reply(res,
            WithStore([&](SqlDatabase& d) { return QuerySeries(d, *ns, *type, from_ms, to_ms); }));
    });
    server.Get("/api/daily", [this](const httplib::Request& req, httplib::Response& res) {
      auto days = IntParam(req, "days", 1, 3660);
      if (!days.ok()) {
        Reply(res, days.status());
        return;
      }
      const std::string ns = TextParam(req, "namespace").value_or("");
      Reply(res, WithStore([&](SqlDatabase& d) {
              return QueryDaily(d, ns, NowMs(), days->value_or(30));
            }));
    });
    server.Get(R"(/api/tasks/([^/]+))",
               [this](const httplib::Request& req, httplib::Response& res) {
                 const std::string id = req.matches[1];
                 if (id.size() > 128) {
                   Reply(res, Status::InvalidArgument("id", "must be at most 128 characters"));
                   return;
                 }
                 Reply(res, WithStore([&](SqlDatabase& d) { return QueryTimeline(d, id); }));
               });
    server.Get("/api/dead", [this](const httplib::Request& req, httplib::Response& res) {
      DeadSearch search;
      search.ns = TextParam(req, "namespace");
      search.type = TextParam(req, "type");
      search.text = TextParam(req, "q");
      auto from = IntParam(req, "from", 0, kMaxMs);
      auto to = IntParam(req, "to", 0, kMaxMs);
      auto limit = IntParam(req, "limit", 1, 1000);
      auto offset = IntParam(req, "offset", 0, 1000000);
      for (auto* p : {&from, &to, &limit, &offset}) {
        if (!p->ok()) {
          Reply(res, p->status());
          return;
        }
      }
      search.from_ms = *from;
      search.to_ms = *to;
      search.limit = limit->value_or(100);
      search.offset = offset->value_or(0);
      Reply(res, WithStore([&](SqlDatabase& d) { return QueryDead(d, search); }));
    });
    server.Get("/api/workers", [this](const httplib::Request& req, httplib::Response& res) {
      auto window = IntParam(req, "window_ms", 1000, 30LL * 86400000);
      if (!window.ok()) {
        Reply(res, window.status());
        return;
      }
      Reply(res, WithStore([&](SqlDatabase& d) {
              return QueryWorkers(d, NowMs(), window->value_or(60000));
            }));
    });
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      auto text = WithStore([this](SqlDatabase& d) { return RenderMetrics(d, stats, NowMs()); });
      if (!text.ok()) {
        res.status = 503;
        res.set_content("# store unavailable: " + text.status().message() + "\n", "text/plain");
        return;
      }
      res.set_content(*text, "text/plain; version=0.0.4; charset=utf-8");
    });
  }
};

ApiServer::ApiServer(std::string store_url, const CollectorStats& stats)
    : impl_(std::make_unique<Impl>(std::move(store_url), stats)) {}

ApiServer::~ApiServer() { Stop(); }

Status ApiServer::Start(const std::string& listen) {
  const auto colon = listen.rfind(':');
  int port = -1;
  if (colon != std::string::npos) {
    const std::string text = listen.substr(colon + 1);
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
    if (ec != std::errc() || end != text.data() + text.size()) port = -1;
  }
  if (colon == std::string::npos || colon == 0 || port < 0 || port > 65535) {
    return Status::InvalidArgument("listen", "must be host:port, got '" + listen + "'");
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  impl_->Routes();
  if (port == 0) {
    impl_->port = impl_->server.bind_to_any_port(host);
  } else if (impl_->server.bind_to_port(host, port)) {
    impl_->port = port;
  }
  if (impl_->port <= 0) {
    return Status::Unavailable("listen: cannot bind " + listen + " (in use, or no such address)");
  }
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  return Status::Ok();
}

int ApiServer::port() const { return impl_->port; }

void ApiServer::Stop() {
  if (impl_ && impl_->thread.joinable()) {
    impl_->server.stop();
    impl_->thread.join();
  }
}

}  // namespace baton::collector
