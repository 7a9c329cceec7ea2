#include "console_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "console_context.h"
#include "http_util.h"
#include "store_schema.h"

namespace baton::console {
namespace {

// No inline script or style anywhere: a payload that smuggles markup into a page cannot run.
const char* const kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'";

// The largest request body: an edited payload (512 KiB) as JSON text inside a JSON body.
constexpr std::size_t kMaxRequestBytes = 2 * 1024 * 1024;

// What the HTTP layer refused, for the errors it answers before any handler runs.
std::string HttpErrorText(int status) {
  switch (status) {
    case 400:
      return "request: malformed (request line, headers or encoding)";
    case 413:
      return "body: larger than " + std::to_string(kMaxRequestBytes) + " bytes";
    case 414:
      return "URI: too long";
    case 416:
      return "Range: not satisfiable";
    default:
      return "HTTP error " + std::to_string(status);
  }
}

}  // namespace

struct ConsoleServer::Impl {
  ConsoleContext ctx;
  std::string web_dir;
  httplib::Server server;
  std::thread thread;
  int port = 0;

  Impl(ConsoleConfig config, UserDirectory users, std::string web)
      : ctx(std::move(config), std::move(users)), web_dir(std::move(web)) {}
};

ConsoleServer::ConsoleServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ConsoleServer::~ConsoleServer() { Stop(); }

StatusOr<std::unique_ptr<ConsoleServer>> ConsoleServer::Create(const ConsoleConfig& config) {
  auto users = UserDirectory::Load(config.users_file);
  if (!users.ok()) return users.status();
  const std::string web_dir = FindWebDir(config.web_dir);
  if (web_dir.empty()) {
    return Status::InvalidArgument(
        "web-dir", (config.web_dir.empty() ? std::string("no built front end found")
                                           : config.web_dir + " has no index.html") +
                       ": build it with console/web/build.sh DIR and pass --web-dir DIR");
  }
  auto impl = std::make_unique<Impl>(config, std::move(users).value(), web_dir);
  // The audit log's table comes with the store's schema: migrate like a collector would.
  Status migrated =
      impl->ctx.store.With([](collector::SqlDatabase& db) { return collector::MigrateStore(db); });
  if (!migrated.ok()) return migrated;
  return std::unique_ptr<ConsoleServer>(new ConsoleServer(std::move(impl)));
}

Status ConsoleServer::Start() {
  Impl& impl = *impl_;
  httplib::Server& server = impl.server;
  server.new_task_queue = [] { return new httplib::ThreadPool(kServerThreads); };
  server.set_payload_max_length(kMaxRequestBytes);
  // Idle and slow connections hold a thread each (cpp-httplib's model). Its timeouts stay at their
  // defaults (5 s): shorter ones dropped requests of clients that were merely slow under load.
  server.set_default_headers({{"Content-Security-Policy", kContentSecurityPolicy},
                              {"X-Frame-Options", "DENY"},
                              {"X-Content-Type-Options", "nosniff"},
                              {"Referrer-Policy", "no-referrer"},
                              {"Cross-Origin-Opener-Policy", "same-origin"}});
  server.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        spdlog::error("{} {}: {}", req.method, req.path, what);
        ReplyError(res, 500, "internal error: " + what);
      });
  AddSessionRoutes(server, impl.ctx);
  AddReadRoutes(server, impl.ctx);
  AddActionRoutes(server, impl.ctx);
  if (!server.set_mount_point("/", impl.web_dir)) {
    return Status::InvalidArgument("web-dir", impl.web_dir + " cannot be served");
  }
  // An unknown /api path is a JSON 404; other unknown paths too (the front end routes by hash).
  // Every error is JSON, also those of the HTTP layer itself (413, 414, 400 for a request that
  // does not parse).
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404) {
      ReplyError(res, 404, "no such page or endpoint: " + req.path);
    } else {
      ReplyError(res, res.status, HttpErrorText(res.status));
    }
  });
  // A NUL in the decoded path would cut the file name short (index.html%00.js).
  server.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    if (req.path.find('\0') == std::string::npos)
      return httplib::Server::HandlerResponse::Unhandled;
    ReplyError(res, 400, "path: must not contain NUL");
    return httplib::Server::HandlerResponse::Handled;
  });

  const std::string& listen = impl.ctx.config.listen;
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument("listen", "must be host:port, e.g. 127.0.0.1:8088");
  }
  const std::string host = listen.substr(0, colon);
  int port = -1;
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (...) {
  }
  if (port < 0 || port > 65535) {
    return Status::InvalidArgument("listen", "port must be 0 to 65535");
  }
  impl.port =
      port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (impl.port <= 0) {
    return Status::Unavailable("listen: cannot bind " + listen);
  }
  impl.ctx.live->Start();
  impl.thread = std::thread([&server] { server.listen_after_bind(); });
  return Status::Ok();
}

int ConsoleServer::port() const { return impl_->port; }

void ConsoleServer::Stop() {
  if (!impl_) return;
  impl_->ctx.live->Stop();  // ends the live streams, which would hold the server's threads
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace baton::console
