#pragma once
// What every handler of the console shares: settings, users, sessions, the store and Redis
// connections, the live feed; and the guard that checks a request's session, role, CSRF token and
// origin before a handler runs.
#include <httplib.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "audit_log.h"
#include "baton/cron.h"
#include "baton/inspector.h"
#include "console_config.h"
#include "live_feed.h"
#include "resource_pool.h"
#include "sessions.h"
#include "sql_database.h"
#include "users.h"

namespace baton::console {

inline constexpr const char* kSessionCookie = "baton_session";
// The HTTP server's threads, and how many of them live streams (SSE) may hold.
inline constexpr std::size_t kServerThreads = 128;
inline constexpr int kMaxLiveStreams = 48;
inline constexpr int kMaxLiveStreamsPerUser = 8;

// What a route needs beyond a session.
enum class Access {
  kRead,   // any role
  kAct,    // operator or admin, not in read-only mode
  kBulk,   // admin, not in read-only mode
  kAudit,  // admin
};

struct ConsoleContext {
  ConsoleConfig config;
  UserDirectory users;
  SessionStore sessions;
  LoginThrottle throttle;
  ResourcePool<collector::SqlDatabase> store;
  ResourcePool<Inspector> redis;
  ResourcePool<CronClient> cron;
  std::unique_ptr<LiveFeed> live;

  // Counts an open GET /api/live stream of `user`; kUnavailable (saying why) when the console's
  // or the user's limit is reached.
  Status OpenLiveStream(const std::string& user);
  void CloseLiveStream(const std::string& user);

  ConsoleContext(ConsoleConfig c, UserDirectory u);

 private:
  // Fills in the time, the user, the role and the address, and writes the row.
  StatusOr<AuditRef> WriteAudit(const httplib::Request& req, const std::string& user,
                                std::string_view role, AuditEntry& entry);

  std::mutex live_streams_mu_;
  int live_streams_ = 0;
  std::map<std::string, int> live_streams_by_user_;

 public:
  // Records an action (failures to write the audit row are logged, never hide the action's own
  // answer).
  void Audit(const httplib::Request& req, const Session& session, AuditEntry entry);
  // The same for a request without a session (a failed login): the name it gave, no role.
  void AuditAnonymous(const httplib::Request& req, const std::string& user, AuditEntry entry);

  // An action's audit row, written before the action runs with the outcome "started" (the
  // action must not run when this fails: kUnavailable), then finished with its outcome.
  StatusOr<AuditRef> AuditStart(const httplib::Request& req, const Session& session,
                                AuditEntry entry);
  void AuditFinish(const AuditRef& ref, const std::string& outcome, const std::string& detail);
};

using GuardedHandler =
    std::function<void(const httplib::Request&, httplib::Response&, const Session&)>;

// Wraps `handler`: 401 without a live session; 403 when the role or read-only mode forbids
// `access`, and for a POST without the session's X-CSRF-Token or from a foreign Origin.
httplib::Server::Handler Guard(ConsoleContext& ctx, Access access, GuardedHandler handler);

// True when the request has no Origin header, or its Origin is this server's own (the Host it
// was sent to) or one of config.allowed_origins.
bool OriginAllowed(const ConsoleContext& ctx, const httplib::Request& req);

bool MayAct(const ConsoleContext& ctx, Role role);
bool MayBulk(const ConsoleContext& ctx, Role role);

void AddSessionRoutes(httplib::Server& server, ConsoleContext& ctx);
void AddReadRoutes(httplib::Server& server, ConsoleContext& ctx);
void AddActionRoutes(httplib::Server& server, ConsoleContext& ctx);

}  // namespace baton::console
