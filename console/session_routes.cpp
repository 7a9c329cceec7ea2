// POST /api/login, POST /api/logout, GET /api/session (docs/console.md "Sessions and CSRF").
#include "console_context.h"
#include "http_util.h"

namespace baton::console {
namespace {

nlohmann::json SessionJson(const ConsoleContext& ctx, const Session& s) {
  return {{"user", s.user},
          {"role", RoleName(s.role)},
          {"csrf", s.csrf},
          {"read_only", ctx.config.read_only},
          {"can_act", MayAct(ctx, s.role)},
          {"can_bulk", MayBulk(ctx, s.role)},
          {"can_audit", s.role == Role::kAdmin}};
}

std::string SessionCookie(const ConsoleContext& ctx, const std::string& token,
                          std::int64_t max_age_s) {
  return std::string(kSessionCookie) + "=" + token + "; Path=/; HttpOnly; SameSite=Strict" +
         "; Max-Age=" + std::to_string(max_age_s) + (ctx.config.cookie_secure ? "; Secure" : "");
}

constexpr std::size_t kMaxPasswordBytes = 1024;

}  // namespace

void AddSessionRoutes(httplib::Server& server, ConsoleContext& ctx) {
  server.Post("/api/login", [&ctx](const httplib::Request& req, httplib::Response& res) {
    // A JSON body cannot be sent cross-site without a CORS preflight, which this server never
    // answers; the Origin check covers browsers that send it anyway.
    if (!OriginAllowed(ctx, req)) {
      ReplyError(res, 403,
                 "Origin " + req.get_header_value("Origin") +
                     " is not this console (behind a proxy: --allowed-origin)");
      return;
    }
    if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0) {
      ReplyError(res, 400, "Content-Type: must be application/json");
      return;
    }
    auto body = JsonBody(req);
    if (!body.ok()) return ReplyError(res, body.status());
    auto user = RequiredText(*body, "user");
    if (!user.ok()) return ReplyError(res, user.status());
    auto password = RequiredText(*body, "password");
    if (!password.ok()) return ReplyError(res, password.status());
    if (user->size() > 64 || password->size() > kMaxPasswordBytes) {
      ReplyError(res, 401, "wrong user name or password");
      return;
    }
    const std::int64_t now = NowMs();
    if (std::int64_t wait = ctx.throttle.Begin(*user, now); wait > 0) {
      res.set_header("Retry-After", std::to_string((wait + 999) / 1000));
      ReplyError(res, 429,
                 "too many login attempts for this user: try again in " +
                     std::to_string((wait + 999) / 1000) + " s");
      return;
    }
    auto found = ctx.users.Authenticate(*user, *password);
    if (!found) {
      ctx.throttle.Failed(*user, now);
      ctx.AuditAnonymous(req, *user, Audited("login_failed", "", "", {}, "wrong password"));
      ReplyError(res, 401, "wrong user name or password");
      return;
    }
    ctx.throttle.Succeeded(*user);
    const std::string token = ctx.sessions.Create(*found, now);
    auto session = ctx.sessions.Touch(token, now);
    const auto max_age = std::chrono::duration_cast<std::chrono::seconds>(ctx.config.session_idle);
    res.set_header("Set-Cookie", SessionCookie(ctx, token, max_age.count()));
    ctx.Audit(req, *session, Audited("login", "", "", {}, "ok"));
    ReplyJson(res, SessionJson(ctx, *session));
  });
  server.Post("/api/logout", Guard(ctx, Access::kRead,
                                   [&ctx](const httplib::Request& req, httplib::Response& res,
                                          const Session& session) {
                                     ctx.sessions.Remove(CookieValue(req, kSessionCookie));
                                     res.set_header("Set-Cookie", SessionCookie(ctx, "", 0));
                                     ctx.Audit(req, session, Audited("logout", "", "", {}, "ok"));
                                     ReplyJson(res, nlohmann::json::object());
                                   }));
  server.Get("/api/session",
             Guard(ctx, Access::kRead,
                   [&ctx](const httplib::Request&, httplib::Response& res, const Session& s) {
                     ReplyJson(res, SessionJson(ctx, s));
                   }));
}

}  // namespace baton::console
