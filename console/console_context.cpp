#include "console_context.h"

#include <sodium.h>
#include <spdlog/spdlog.h>

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

void ConsoleContext::Audit(const httplib::Request& req, const Session& session, AuditEntry entry) {
  entry.role = std::string(RoleName(session.role));
  AuditAnonymous(req, session.user, std::move(entry));
}

void ConsoleContext::AuditAnonymous(const httplib::Request& req, const std::string& user,
                                    AuditEntry entry) {
  entry.at_ms = NowMs();
  entry.user = user;
  entry.remote = req.remote_addr;
  Status written =
      store.With([&entry](collector::SqlDatabase& db) { return AppendAudit(db, entry); });
  if (!written.ok()) {
    spdlog::error("audit log: could not record {} by {}: {}", entry.action, entry.user,
                  written.message());
  }
}

bool SameOrigin(const httplib::Request& req) {
  if (!req.has_header("Origin")) return true;
  const std::string origin = req.get_header_value("Origin");
  const std::string host = req.get_header_value("Host");
  return !host.empty() && (origin == "http://" + host || origin == "https://" + host);
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
      if (!SameOrigin(req)) {
        ReplyError(res, 403, "Origin " + req.get_header_value("Origin") + " is not this console");
        return;
      }
      if (!SameSecret(req.get_header_value("X-CSRF-Token"), session->csrf)) {
        ReplyError(res, 403,
                   "X-CSRF-Token: missing or not this session's token (GET /api/session)");
        return;
      }
    }
    const std::string role(RoleName(session->role));
    switch (access) {
      case Access::kRead:
        break;
      case Access::kAct:
        if (ctx.config.read_only) {
          ReplyError(res, 403, "the console runs in read-only mode: no action is allowed");
          return;
        }
        if (!MayAct(ctx, session->role)) {
          ReplyError(res, 403, "role " + role + " may not do this: operator or admin may");
          return;
        }
        break;
      case Access::kBulk:
        if (ctx.config.read_only) {
          ReplyError(res, 403, "the console runs in read-only mode: no action is allowed");
          return;
        }
        if (!MayBulk(ctx, session->role)) {
          ReplyError(res, 403, "role " + role + " may not do bulk actions: admin may");
          return;
        }
        break;
      case Access::kAudit:
        if (session->role != Role::kAdmin) {
          ReplyError(res, 403, "role " + role + " may not read the audit log: admin may");
          return;
        }
        break;
    }
    handler(req, res, *session);
  };
}

}  // namespace baton::console
