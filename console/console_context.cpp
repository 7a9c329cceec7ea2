#include "console_context.h"

#include <sodium.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "http_util.h"
#include "store_queries.h"

namespace baton::console {
namespace {

constexpr std::size_t kStoreConnections = 4;
constexpr std::size_t kRedisConnections = 4;

InspectorOptions InspectorOptionsFor(const ConsoleConfig& config) {
  InspectorOptions options;
  options.redis = config.redis;
  return options;
}

// Compares in constant time (the CSRF token is a secret).
bool SameSecret(const std::string& a, const std::string& b) {
  return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

ConsoleContext::ConsoleContext(ConsoleConfig c, UserDirectory u)
    : config(std::move(c)),
      users(std::move(u)),
      sessions(config.session_idle),
      store([url = config.store] { return collector::OpenSqlDatabase(url); }, kStoreConnections),
      redis([options = InspectorOptionsFor(config)] { return Inspector::Connect(options); },
            kRedisConnections),
      cron([options = CronClientOptions{config.redis}] { return CronClient::Connect(options); },
           1) {
  InspectorOptions live_options = InspectorOptionsFor(config);
  // The live flow reads every queue every second: smaller scans keep it cheap on long streams
  // (counts past them are flagged inexact in the JSON).
  live_options.event_scan_limit = 2000;
  live_options.entry_scan_limit = 2000;
  live = std::make_unique<LiveFeed>(
      live_options,
      [this](std::int64_t now_ms) {
        return store.With([now_ms](collector::SqlDatabase& db) {
          return collector::QueryWorkers(db, now_ms, 60000);
        });
      },
      config.live_interval);
}

StatusOr<AuditRef> ConsoleContext::WriteAudit(const httplib::Request& req, const std::string& user,
                                              std::string_view role, AuditEntry& entry) {
  entry.at_ms = NowMs();
  entry.user = user;
  entry.role = std::string(role);
  entry.remote = req.remote_addr;
  return store.With([&entry](collector::SqlDatabase& db) { return AppendAudit(db, entry); });
}

void ConsoleContext::Audit(const httplib::Request& req, const Session& session, AuditEntry entry) {
  auto written = WriteAudit(req, session.user, RoleName(session.role), entry);
  if (!written.ok()) {
    spdlog::error("audit log: could not record {} by {}: {}", entry.action, entry.user,
                  written.status().message());
  }
}

void ConsoleContext::AuditAnonymous(const httplib::Request& req, const std::string& user,
                                    AuditEntry entry) {
  auto written = WriteAudit(req, user, "", entry);
  if (!written.ok()) {
    spdlog::error("audit log: could not record {} by {}: {}", entry.action, entry.user,
                  written.status().message());
  }
}

StatusOr<AuditRef> ConsoleContext::AuditStart(const httplib::Request& req, const Session& session,
                                              AuditEntry entry) {
  entry.outcome = "started";
  auto written = WriteAudit(req, session.user, RoleName(session.role), entry);
  if (!written.ok()) {
    spdlog::error("audit log: {} by {} refused, the audit row cannot be written: {}", entry.action,
                  entry.user, written.status().message());
    return Status::Unavailable("the audit log cannot be written, so the action was not run: " +
                               written.status().message());
  }
  return written;
}

void ConsoleContext::AuditFinish(const AuditRef& ref, const std::string& outcome,
                                 const std::string& detail) {
  Status s = store.With(
      [&](collector::SqlDatabase& db) { return SetAuditOutcome(db, ref, outcome, detail); });
  if (!s.ok()) spdlog::error("audit log: could not record an outcome: {}", s.message());
}

Status ConsoleContext::OpenLiveStream(const std::string& user) {
  std::lock_guard<std::mutex> lock(live_streams_mu_);
  if (live_streams_ >= kMaxLiveStreams) {
    return Status::Unavailable("too many live streams open on this console: close some pages");
  }
  int& mine = live_streams_by_user_[user];
  if (mine >= kMaxLiveStreamsPerUser) {
    return Status::Unavailable("you have " + std::to_string(mine) +
                               " live streams open already: close some pages");
  }
  ++mine;
  ++live_streams_;
  return Status::Ok();
}

void ConsoleContext::CloseLiveStream(const std::string& user) {
  std::lock_guard<std::mutex> lock(live_streams_mu_);
  --live_streams_;
  if (auto it = live_streams_by_user_.find(user); it != live_streams_by_user_.end()) {
    if (--it->second <= 0) live_streams_by_user_.erase(it);
  }
}

bool OriginAllowed(const ConsoleContext& ctx, const httplib::Request& req) {
  if (!req.has_header("Origin")) return true;
  const std::string origin = req.get_header_value("Origin");
  const std::string host = req.get_header_value("Host");
  // The scheme is not compared: behind a TLS proxy the browser says https, the console sees http.
  if (!host.empty() && (origin == "http://" + host || origin == "https://" + host)) return true;
  return std::find(ctx.config.allowed_origins.begin(), ctx.config.allowed_origins.end(), origin) !=
         ctx.config.allowed_origins.end();
}

bool MayAct(const ConsoleContext& ctx, Role role) {
  return !ctx.config.read_only && (role == Role::kOperator || role == Role::kAdmin);
}

bool MayBulk(const ConsoleContext& ctx, Role role) {
  return !ctx.config.read_only && role == Role::kAdmin;
}

httplib::Server::Handler Guard(ConsoleContext& ctx, Access access, GuardedHandler handler) {
  return [&ctx, access, handler = std::move(handler)](const httplib::Request& req,
                                                      httplib::Response& res) {
    const std::string token = CookieValue(req, kSessionCookie);
    auto session = token.empty() ? std::nullopt : ctx.sessions.Touch(token, NowMs());
    if (!session) {
      ReplyError(res, 401, "not logged in (or the session expired): POST /api/login");
      return;
    }
    if (req.method == "POST") {
      if (!OriginAllowed(ctx, req)) {
        ReplyError(res, 403,
                   "Origin " + req.get_header_value("Origin") +
                       " is not this console (behind a proxy: --allowed-origin)");
        return;
      }
      if (!SameSecret(req.get_header_value("X-CSRF-Token"), session->csrf)) {
        ReplyError(res, 403,
                   "X-CSRF-Token: missing or not this session's token (GET /api/session)");
        return;
      }
    }
    // Actions (not reading the audit log) are off in read-only mode; then each needs its role.
    const bool action = access == Access::kAct || access == Access::kBulk;
    if (action && ctx.config.read_only) {
      ReplyError(res, 403, "the console runs in read-only mode: no action is allowed");
      return;
    }
    const std::string role(RoleName(session->role));
    const bool allowed = access == Access::kRead ||
                         (access == Access::kAct && MayAct(ctx, session->role)) ||
                         (access == Access::kBulk && MayBulk(ctx, session->role)) ||
                         (access == Access::kAudit && session->role == Role::kAdmin);
    if (!allowed) {
      const char* what = access == Access::kAct    ? " may not do this: operator or admin may"
                         : access == Access::kBulk ? " may not do bulk actions: admin may"
                                                   : " may not read the audit log: admin may";
      ReplyError(res, 403, "role " + role + what);
      return;
    }
    handler(req, res, *session);
  };
}

}  // namespace baton::console
