#include "console_config.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "users.h"

namespace baton::console {

ParsedConsoleCommandLine ParseConsoleCommandLine(int argc, const char* const* argv) {
  CLI::App app{"baton-console: the web console of Baton (docs/console.md)"};
  app.set_version_flag("--version", std::string("baton-console ") + BATON_VERSION);
  ConsoleConfig config;
  int idle_minutes = static_cast<int>(config.session_idle.count());
  std::int64_t live_ms = config.live_interval.count();
  app.add_option("--redis", config.redis.url, "Redis URL of the queues")
      ->envname("BATON_REDIS_URL")
      ->capture_default_str();
  app.add_option("--store", config.store,
                 "the collector's store: sqlite:///path/stats.db or postgresql://...")
      ->envname("BATON_STORE")
      ->capture_default_str();
  app.add_option("--users", config.users_file, "the users file (JSON, Argon2id hashes)")
      ->envname("BATON_CONSOLE_USERS");
  app.add_option("--listen", config.listen, "host:port to serve on (port 0: any free one)")
      ->envname("BATON_CONSOLE_LISTEN")
      ->capture_default_str();
  app.add_option("--web-dir", config.web_dir, "the built front end (default: installed or built)");
  app.add_flag("--read-only", config.read_only, "refuse every action, whatever the role")
      ->envname("BATON_CONSOLE_READ_ONLY");
  app.add_option("--session-idle-minutes", idle_minutes, "a session unused this long ends")
      ->check(CLI::Range(1, 10080))
      ->capture_default_str();
  app.add_option("--allowed-origin", config.allowed_origins,
                 "another origin browsers may use, e.g. https://baton.example.com (repeatable)")
      ->envname("BATON_CONSOLE_ALLOWED_ORIGINS")
      ->delimiter(',');
  app.add_flag("--cookie-secure", config.cookie_secure,
               "mark the session cookie Secure (behind HTTPS)");
  app.add_option("--live-interval-ms", live_ms, "refresh period of the live flow")
      ->check(CLI::Range(100, 60000))
      ->capture_default_str();
  app.add_option("--log-level", config.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  CLI::App* hash = app.add_subcommand(
      "hash-password", "read a password on stdin (one line) and print its Argon2id hash");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return {std::nullopt, app.exit(e)};
  }
  if (hash->parsed()) {
    std::string password;
    std::getline(std::cin, password);
    if (!password.empty() && password.back() == '\r') password.pop_back();
    auto hashed = HashPassword(password);
    if (!hashed.ok()) {
      std::cerr << "baton-console hash-password: " << hashed.status().message() << "\n";
      return {std::nullopt, 2};
    }
    std::cout << *hashed << "\n";
    return {std::nullopt, 0};
  }
  if (config.users_file.empty()) {
    std::cerr << "baton-console: --users: is required (a JSON file of users; docs/console.md)\n";
    return {std::nullopt, 2};
  }
  config.session_idle = std::chrono::minutes(idle_minutes);
  config.live_interval = std::chrono::milliseconds(live_ms);
  return {config, 0};
}

std::string FindWebDir(const std::string& configured) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (!configured.empty()) {
    candidates.push_back(configured);
  } else {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) candidates.push_back(exe.parent_path().parent_path() / "share/baton/console-web");
    candidates.push_back(BATON_CONSOLE_BUILD_WEB_DIR);
  }
  for (const auto& dir : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(dir / "index.html", ec)) return dir.string();
  }
  return "";
}

}  // namespace baton::console
