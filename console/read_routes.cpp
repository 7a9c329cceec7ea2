// The console's read-only endpoints (docs/console.md "HTTP API"): history from the collector's
// store, live state from Redis through the Inspector and the CronClient.
#include <chrono>
#include <thread>

#include "console_context.h"
#include "http_util.h"
#include "store_queries.h"

namespace baton::console {
namespace {

using collector::SqlDatabase;
using nlohmann::json;

// The newest `n` tasks a cron job enqueued ("cron:<name>:<fire time>"), from the store. Fire
// times are 10-digit Unix seconds until 2286, so text order is time order and the primary key
// serves the range.
StatusOr<json> LastCronOutcomes(SqlDatabase& db, const CronJobSpec& job, std::int64_t n) {
  const std::string prefix = "cron:" + job.name + ":";
  auto rows = db.Query(
      "SELECT task_id, state, updated_ms FROM task_state WHERE ns = $1 AND task_id >= $2 AND "
      "task_id < $3 ORDER BY task_id DESC LIMIT $4",
      {job.ns, prefix, "cron:" + job.name + ";", n});
  if (!rows.ok()) return rows.status();
  json out = json::array();
  for (const auto& r : *rows) {
    out.push_back({{"task_id", std::get<std::string>(r[0])},
                   {"state", std::get<std::string>(r[1])},
                   {"updated_ms", collector::AsInt(r[2])}});
  }
  return out;
}

json CronJobJson(const CronJobSpec& job) {
  json j = {{"name", job.name},
            {"schedule", job.schedule},
            {"timezone", job.timezone},
            {"ns", job.ns},
            {"task_type", job.task_type},
            {"payload", job.payload},
            {"max_retry", job.max_retry},
            {"enabled", job.enabled},
            {"missed", job.missed == MissedTicks::kSkip ? "skip" : "run_once"}};
  j["execution_timeout"] = job.execution_timeout ? json(*job.execution_timeout) : json(nullptr);
  return j;
}

void GetCron(ConsoleContext& ctx, httplib::Response& res) {
  auto list = ctx.cron.With([](CronClient& c) { return c.List(); });
  if (!list.ok()) return ReplyError(res, list.status());
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  json jobs = json::array();
  for (const auto& job : list->jobs) {
    json j = CronJobJson(job);
    json next = json::array();
    if (auto times = NextFireTimes(job, now, 3); times.ok()) {
      for (auto t : *times) next.push_back(t.time_since_epoch().count());
    }
    j["next"] = next;
    auto last = ctx.store.With([&job](SqlDatabase& db) { return LastCronOutcomes(db, job, 3); });
    j["last"] = last.ok() ? *last : json::array();
    jobs.push_back(std::move(j));
  }
  json unreadable = json::array();
  for (const auto& u : list->unreadable) {
    unreadable.push_back({{"name", u.name}, {"definition", u.definition}, {"error", u.error}});
  }
  ReplyJson(res, {{"jobs", jobs}, {"unreadable", unreadable}});
}

void GetTask(ConsoleContext& ctx, const std::string& ns, const std::string& id,
             httplib::Response& res) {
  auto live = ctx.redis.With([&](Inspector& in) { return in.GetTask(ns, id); });
  if (!live.ok() && live.status().code() != StatusCode::kNotFound) {
    return ReplyError(res, live.status());
  }
  auto timeline =
      ctx.store.With([&id](SqlDatabase& db) { return collector::QueryTimeline(db, id); });
  if (!timeline.ok() && timeline.status().code() != StatusCode::kNotFound) {
    return ReplyError(res, timeline.status());
  }
  if (!live.ok() && !timeline.ok()) {
    return ReplyError(
        res, 404,
        "no task " + id + " in namespace " + ns + " (neither Redis nor the store knows it)");
  }
  ReplyJson(res, {{"ns", ns},
                  {"id", id},
                  {"live", live.ok() ? live->ToJson() : json(nullptr)},
                  {"timeline", timeline.ok() ? *timeline : json(nullptr)}});
}

// Task ids are printable (their pattern excludes quotes and separators), but the file name of
// the download is built only from safe characters anyway.
std::string DownloadName(const std::string& id) {
  std::string name;
  for (char c : id) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
    name.push_back(safe ? c : '_');
  }
  return name + ".payload.json";
}

void GetPayload(ConsoleContext& ctx, const std::string& ns, const std::string& id,
                httplib::Response& res) {
  auto live = ctx.redis.With([&](Inspector& in) { return in.GetTask(ns, id); });
  if (!live.ok()) return ReplyError(res, live.status());
  if (!live->body) {
    return ReplyError(res, 404,
                      "task " + id + " is " + std::string(TaskStateName(live->state)) +
                          ": its payload is not kept once it finished");
  }
  res.set_header("Cache-Control", "no-store");
  res.set_header("Content-Disposition", "attachment; filename=\"" + DownloadName(id) + "\"");
  res.set_content(live->body->payload, "application/octet-stream");
}

}  // namespace

void AddReadRoutes(httplib::Server& server, ConsoleContext& ctx) {
  server.Get("/healthz", [&ctx](const httplib::Request&, httplib::Response& res) {
    auto store = ctx.store.With([](SqlDatabase& db) -> StatusOr<json> {
      auto rows = db.Query("SELECT COUNT(*) FROM baton_schema");
      if (!rows.ok()) return rows.status();
      return json::object();
    });
    auto redis = ctx.redis.With([](Inspector& in) { return in.ListNamespaces(); });
    const bool ok = store.ok() && redis.ok();
    json body = {{"status", ok ? "ok" : "unavailable"},
                 {"store", store.ok() ? "up" : "down"},
                 {"redis", redis.ok() ? "up" : "down"}};
    ReplyJson(res, body, ok ? 200 : 503);
  });
  server.Get("/api/namespaces",
             Guard(ctx, Access::kRead,
                   [&ctx](const httplib::Request&, httplib::Response& res, const Session&) {
                     auto list = ctx.redis.With([](Inspector& in) { return in.ListNamespaces(); });
                     if (!list.ok()) return ReplyError(res, list.status());
                     ReplyJson(res, {{"namespaces", *list}});
                   }));
  server.Get("/api/overview",
             Guard(ctx, Access::kRead,
                   [&ctx](const httplib::Request&, httplib::Response& res, const Session&) {
                     Reply(res, ctx.store.With([](SqlDatabase& db) {
                       return collector::QueryOverview(db, NowMs());
                     }));
                   }));
  server.Get("/api/series",
             Guard(ctx, Access::kRead,
                   [&ctx](const httplib::Request& req, httplib::Response& res, const Session&) {
                     const auto ns = TextParam(req, "ns");
                     const auto type = TextParam(req, "type");
                     if (!ns || !type) return ReplyError(res, 400, "ns and type: are required");
                     const std::int64_t now = NowMs();
                     auto from = IntParam(req, "from_ms", 0, kMaxMs);
                     if (!from.ok()) return ReplyError(res, from.status());
                     auto to = IntParam(req, "to_ms", 0, kMaxMs);
                     if (!to.ok()) return ReplyError(res, to.status());
                     const std::int64_t to_ms = to->value_or(now);
                     const std::int64_t from_ms = from->value_or(to_ms - 3600000);
                     if (from_ms >= to_ms || to_ms - from_ms > 31LL * 86400000) {
                       return ReplyError(res, 400,
                                         "from_ms, to_ms: from_ms must be before to_ms, at "
                                         "most 31 days apart");
                     }
                     Reply(res, ctx.store.With([&](SqlDatabase& db) {
                       return collector::QuerySeries(db, *ns, *type, from_ms, to_ms);
                     }));
                   }));
  server.Get("/api/daily",
             Guard(ctx, Access::kRead,
                   [&ctx](const httplib::Request& req, httplib::Response& res, const Session&) {
                     auto days = IntParam(req, "days", 1, 3660);
                     if (!days.ok()) return ReplyError(res, days.status());
                     const std::string ns = TextParam(req, "ns").value_or("");
                     Reply(res, ctx.store.With([&](SqlDatabase& db) {
                       return collector::QueryDaily(db, ns, NowMs(), days->value_or(30));
                     }));
                   }));
  server.Get("/api/workers",
             Guard(ctx, Access::kRead,
                   [&ctx](const httplib::Request& req, httplib::Response& res, const Session&) {
                     auto window = IntParam(req, "window_ms", 1000, 30LL * 86400000);
                     if (!window.ok()) return ReplyError(res, window.status());
                     Reply(res, ctx.store.With([&](SqlDatabase& db) {
                       return collector::QueryWorkers(db, NowMs(), window->value_or(300000));
                     }));
                   }));
  server.Get("/api/dead",
             Guard(ctx, Access::kRead,
                   [&ctx](const httplib::Request& req, httplib::Response& res, const Session&) {
                     collector::DeadSearch search;
                     search.ns = TextParam(req, "ns");
                     search.type = TextParam(req, "type");
                     search.text = TextParam(req, "text");
                     for (auto [name, field] : {std::pair{"from_ms", &search.from_ms},
                                                std::pair{"to_ms", &search.to_ms}}) {
                       auto v = IntParam(req, name, 0, kMaxMs);
                       if (!v.ok()) return ReplyError(res, v.status());
                       *field = *v;
                     }
                     auto limit = IntParam(req, "limit", 1, 1000);
                     if (!limit.ok()) return ReplyError(res, limit.status());
                     auto offset = IntParam(req, "offset", 0, 1000000);
                     if (!offset.ok()) return ReplyError(res, offset.status());
                     search.limit = limit->value_or(100);
                     search.offset = offset->value_or(0);
                     Reply(res, ctx.store.With([&](SqlDatabase& db) {
                       return collector::QueryDead(db, search);
                     }));
                   }));
  server.Get(R"(/api/tasks/([^/]+)/([^/]+)/payload)",
             Guard(ctx, Access::kRead,
                   [&ctx](const httplib::Request& req, httplib::Response& res, const Session&) {
                     GetPayload(ctx, req.matches[1], req.matches[2], res);
                   }));
  server.Get(R"(/api/tasks/([^/]+)/([^/]+))",
             Guard(ctx, Access::kRead,
                   [&ctx](const httplib::Request& req, httplib::Response& res, const Session&) {
                     GetTask(ctx, req.matches[1], req.matches[2], res);
                   }));
  server.Get("/api/cron", Guard(ctx, Access::kRead,
                                [&ctx](const httplib::Request&, httplib::Response& res,
                                       const Session&) { GetCron(ctx, res); }));
  server.Get("/api/doctor",
             Guard(ctx, Access::kRead,
                   [&ctx](const httplib::Request& req, httplib::Response& res, const Session&) {
                     const auto ns = TextParam(req, "ns");
                     const auto id = TextParam(req, "id");
                     const auto type = TextParam(req, "type");
                     if (!ns || (!id && !type) || (id && type)) {
                       return ReplyError(res, 400, "ns and one of id or type: are required");
                     }
                     if (id) {
                       auto verdict =
                           ctx.redis.With([&](Inspector& in) { return in.Doctor(*ns, *id); });
                       if (!verdict.ok()) return ReplyError(res, verdict.status());
                       return ReplyJson(res, verdict->ToJson());
                     }
                     auto diagnosis =
                         ctx.redis.With([&](Inspector& in) { return in.DoctorQueue(*ns, *type); });
                     if (!diagnosis.ok()) return ReplyError(res, diagnosis.status());
                     ReplyJson(res, diagnosis->ToJson());
                   }));
  server.Get("/api/audit",
             Guard(ctx, Access::kAudit,
                   [&ctx](const httplib::Request& req, httplib::Response& res, const Session&) {
                     auto limit = IntParam(req, "limit", 1, 1000);
                     if (!limit.ok()) return ReplyError(res, limit.status());
                     auto offset = IntParam(req, "offset", 0, 10000000);
                     if (!offset.ok()) return ReplyError(res, offset.status());
                     Reply(res, ctx.store.With([&](SqlDatabase& db) {
                       return QueryAudit(db, limit->value_or(100), offset->value_or(0));
                     }));
                   }));
  server.Get("/api/live/snapshot",
             Guard(ctx, Access::kRead,
                   [&ctx](const httplib::Request&, httplib::Response& res, const Session&) {
                     auto snap = ctx.live->WaitNewer(0, std::chrono::seconds(5));
                     if (!snap.json) return ReplyError(res, 503, "the live feed has no data yet");
                     res.set_header("Cache-Control", "no-store");
                     res.set_content(*snap.json, "application/json");
                   }));
  server.Get(
      "/api/live",
      Guard(ctx, Access::kRead,
            [&ctx](const httplib::Request& req, httplib::Response& res, const Session& session) {
              // Each open stream holds one of the server's threads: keep most for the rest, and
              // no user may take them all.
              if (Status opened = ctx.OpenLiveStream(session.user); !opened.ok()) {
                return ReplyError(res, 503, opened.message());
              }
              res.set_header("Cache-Control", "no-store");
              res.set_header("X-Accel-Buffering", "no");
              auto last = std::make_shared<std::uint64_t>(0);
              res.set_chunked_content_provider(
                  "text/event-stream",
                  [&ctx, last, token = CookieValue(req, kSessionCookie)](std::size_t,
                                                                         httplib::DataSink& sink) {
                    // One snapshot per call; a comment line keeps idle proxies from closing.
                    auto snap = ctx.live->WaitNewer(*last, std::chrono::seconds(15));
                    // The stream ends with the console, and with the session (logout, expiry).
                    if (snap.stopped || !ctx.sessions.Alive(token, NowMs())) return false;
                    std::string chunk;
                    if (snap.json && snap.seq > *last) {
                      *last = snap.seq;
                      chunk = "event: snapshot\ndata: " + *snap.json + "\n\n";
                    } else {
                      chunk = ": keep-alive\n\n";
                    }
                    if (!sink.is_writable()) return false;
                    return sink.write(chunk.data(), chunk.size());
                  },
                  [&ctx, user = session.user](bool) { ctx.CloseLiveStream(user); });
            }));
}

}  // namespace baton::console
