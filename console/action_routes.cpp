// The console's actions (docs/console.md "HTTP API"): replay, edit-and-replay and delete a dead
// task, bulk replay / delete by filter with a preview, enable / disable a cron job. Every change
// goes to Redis through the Inspector or the CronClient (the functions library), and every
// attempt, successful or not, is written to the audit log.
#include "console_context.h"
#include "http_util.h"

namespace baton::console {
namespace {

using nlohmann::json;

constexpr std::size_t kPreviewSample = 20;
// A bulk action touches at most this many tasks (narrow the filter for more).
constexpr std::size_t kMaxBulk = 100000;

std::string Outcome(const Status& s) { return s.ok() ? "ok" : s.ToString(); }

// The dead-task filter of a preview or a bulk action.
StatusOr<std::pair<std::string, DeadFilter>> ReadFilter(const json& body) {
  auto ns = RequiredText(body, "ns");
  if (!ns.ok()) return ns.status();
  DeadFilter filter;
  filter.limit = 0;
  auto type = OptionalText(body, "type");
  if (!type.ok()) return type.status();
  filter.type = type->value_or("");
  auto since = OptionalInt(body, "since_ms", 0, kMaxMs);
  if (!since.ok()) return since.status();
  auto until = OptionalInt(body, "until_ms", 0, kMaxMs);
  if (!until.ok()) return until.status();
  filter.since_ms = *since;
  filter.until_ms = *until;
  if (filter.since_ms && filter.until_ms && *filter.since_ms > *filter.until_ms) {
    return Status::InvalidArgument("since_ms", "must not be after until_ms");
  }
  return std::pair{*ns, filter};
}

std::string FilterText(const DeadFilter& f) {
  std::string text = "type=" + (f.type.empty() ? std::string("*") : f.type);
  if (f.since_ms) text += " since_ms=" + std::to_string(*f.since_ms);
  if (f.until_ms) text += " until_ms=" + std::to_string(*f.until_ms);
  return text;
}

// The body of a one-task action: the JSON object with its "ns" and "id".
struct TaskRef {
  nlohmann::json body;
  std::string ns, id;
};

StatusOr<TaskRef> ReadTaskRef(const httplib::Request& req) {
  auto body = JsonBody(req);
  if (!body.ok()) return body.status();
  auto ns = RequiredText(*body, "ns");
  if (!ns.ok()) return ns.status();
  auto id = RequiredText(*body, "id");
  if (!id.ok()) return id.status();
  return TaskRef{std::move(body).value(), *ns, *id};
}

void ReplayOne(ConsoleContext& ctx, const httplib::Request& req, httplib::Response& res,
               const Session& session) {
  auto ref = ReadTaskRef(req);
  if (!ref.ok()) return ReplyError(res, ref.status());
  const json& body = ref->body;
  const std::string& ns = ref->ns;
  const std::string& id = ref->id;
  std::optional<std::string> payload;
  if (const auto it = body.find("payload"); it != body.end() && !it->is_null()) {
    if (it->is_object()) {
      payload = it->dump();
    } else if (it->is_string()) {
      payload = it->get<std::string>();
    } else {
      return ReplyError(res, 400, "payload: must be a JSON object (or its text)");
    }
  }
  const std::string detail =
      payload ? "new payload of " + std::to_string(payload->size()) + " bytes" : "";
  auto audit = ctx.AuditStart(
      req, session, Audited(payload ? "edit_replay" : "replay", ns, id, {id}, "", detail));
  if (!audit.ok()) return ReplyError(res, audit.status());
  auto replayed = ctx.redis.With([&](Inspector& in) { return in.ReplayDead(ns, id, payload); });
  ctx.AuditFinish(*audit, Outcome(replayed.status()), detail);
  if (!replayed.ok()) return ReplyError(res, replayed.status());
  ReplyJson(res, {{"stream_id", *replayed}});
}

void DeleteOne(ConsoleContext& ctx, const httplib::Request& req, httplib::Response& res,
               const Session& session) {
  auto ref = ReadTaskRef(req);
  if (!ref.ok()) return ReplyError(res, ref.status());
  auto audit = ctx.AuditStart(req, session, Audited("delete", ref->ns, ref->id, {ref->id}, ""));
  if (!audit.ok()) return ReplyError(res, audit.status());
  Status deleted = ctx.redis.With([&](Inspector& in) { return in.DeleteDead(ref->ns, ref->id); });
  ctx.AuditFinish(*audit, Outcome(deleted), "");
  if (!deleted.ok()) return ReplyError(res, deleted);
  ReplyJson(res, json::object());
}

void Preview(ConsoleContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto body = JsonBody(req);
  if (!body.ok()) return ReplyError(res, body.status());
  auto filter = ReadFilter(*body);
  if (!filter.ok()) return ReplyError(res, filter.status());
  auto dead =
      ctx.redis.With([&](Inspector& in) { return in.ListDead(filter->first, filter->second); });
  if (!dead.ok()) return ReplyError(res, dead.status());
  json sample = json::array();
  for (std::size_t i = 0; i < dead->size() && i < kPreviewSample; ++i) {
    sample.push_back((*dead)[i].ToJson());
  }
  ReplyJson(res, {{"matched", dead->size()}, {"sample", sample}});
}

// Replays or deletes exactly the dead tasks the filter matches now, when they are as many as the
// preview showed (`expect`); one call per task, so the audit row names every task tried.
void Bulk(ConsoleContext& ctx, const httplib::Request& req, httplib::Response& res,
          const Session& session) {
  auto body = JsonBody(req);
  if (!body.ok()) return ReplyError(res, body.status());
  auto action = RequiredText(*body, "action");
  if (!action.ok()) return ReplyError(res, action.status());
  if (*action != "replay" && *action != "delete") {
    return ReplyError(res, 400, "action: must be replay or delete");
  }
  auto filter = ReadFilter(*body);
  if (!filter.ok()) return ReplyError(res, filter.status());
  auto expect = OptionalInt(*body, "expect", 0, static_cast<std::int64_t>(kMaxBulk));
  if (!expect.ok()) return ReplyError(res, expect.status());
  if (!*expect) return ReplyError(res, 400, "expect: is required (the count the preview showed)");
  const auto& [ns, dead_filter] = *filter;
  auto dead = ctx.redis.With([&](Inspector& in) { return in.ListDead(ns, dead_filter); });
  if (!dead.ok()) return ReplyError(res, dead.status());
  if (static_cast<std::int64_t>(dead->size()) != **expect) {
    ReplyJson(
        res,
        {{"error", "the filter now matches " + std::to_string(dead->size()) + " tasks, not the " +
                       std::to_string(**expect) + " of the preview: preview again"},
         {"matched", dead->size()}},
        409);
    return;
  }
  DeadBatchResult result;
  result.matched = dead->size();
  std::vector<std::string> ids;
  ids.reserve(dead->size());
  for (const auto& task : *dead) ids.push_back(task.id);
  // The row names every task about to be tried: a console killed halfway leaves it "started".
  auto audit = ctx.AuditStart(req, session,
                              Audited("bulk_" + *action, ns, FilterText(dead_filter), ids, "",
                                      std::to_string(ids.size()) + " tasks to " + *action));
  if (!audit.ok()) return ReplyError(res, audit.status());
  Status failed_hard = ctx.redis.With([&](Inspector& in) -> Status {
    for (const auto& task : *dead) {
      Status s =
          *action == "replay" ? in.ReplayDead(ns, task.id).status() : in.DeleteDead(ns, task.id);
      if (s.ok()) {
        ++result.succeeded;
      } else if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kVersionMismatch) {
        return s;  // the rest would fail the same way
      } else {
        result.failed_ids.push_back(task.id);
        result.failures.push_back(s.ToString());
      }
    }
    return Status::Ok();
  });
  ctx.AuditFinish(*audit, Outcome(failed_hard),
                  std::to_string(result.succeeded) + " of " + std::to_string(result.matched) +
                      " done, " + std::to_string(result.failed_ids.size()) + " failed");
  if (!failed_hard.ok()) return ReplyError(res, failed_hard);
  ReplyJson(res, result.ToJson());
}

void SetCronEnabled(ConsoleContext& ctx, const httplib::Request& req, httplib::Response& res,
                    const Session& session) {
  auto body = JsonBody(req);
  if (!body.ok()) return ReplyError(res, body.status());
  auto name = RequiredText(*body, "name");
  if (!name.ok()) return ReplyError(res, name.status());
  if (name->size() > 64) {
    return ReplyError(res, 400, "name: must be a cron job name (at most 64 characters)");
  }
  const auto enabled = body->find("enabled");
  if (enabled == body->end() || !enabled->is_boolean()) {
    return ReplyError(res, 400, "enabled: is required and must be true or false");
  }
  const bool on = enabled->get<bool>();
  auto audit =
      ctx.AuditStart(req, session, Audited(on ? "cron_enable" : "cron_disable", "", *name, {}, ""));
  if (!audit.ok()) return ReplyError(res, audit.status());
  Status set = ctx.cron.With([&](CronClient& c) { return c.SetEnabled(*name, on); });
  ctx.AuditFinish(*audit, Outcome(set), "");
  if (!set.ok()) return ReplyError(res, set);
  ReplyJson(res, json::object());
}

}  // namespace

void AddActionRoutes(httplib::Server& server, ConsoleContext& ctx) {
  server.Post("/api/dead/replay", Guard(ctx, Access::kAct,
                                        [&ctx](const httplib::Request& req, httplib::Response& res,
                                               const Session& s) { ReplayOne(ctx, req, res, s); }));
  server.Post("/api/dead/delete", Guard(ctx, Access::kAct,
                                        [&ctx](const httplib::Request& req, httplib::Response& res,
                                               const Session& s) { DeleteOne(ctx, req, res, s); }));
  server.Post("/api/dead/preview", Guard(ctx, Access::kRead,
                                         [&ctx](const httplib::Request& req, httplib::Response& res,
                                                const Session&) { Preview(ctx, req, res); }));
  server.Post("/api/dead/bulk", Guard(ctx, Access::kBulk,
                                      [&ctx](const httplib::Request& req, httplib::Response& res,
                                             const Session& s) { Bulk(ctx, req, res, s); }));
  server.Post("/api/cron/enable",
              Guard(ctx, Access::kAct,
                    [&ctx](const httplib::Request& req, httplib::Response& res, const Session& s) {
                      SetCronEnabled(ctx, req, res, s);
                    }));
}

}  // namespace baton::console
