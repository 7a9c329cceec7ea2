#pragma once
// baton-console's settings, from flags and BATON_* environment variables (docs/console.md).
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "baton/redis_options.h"

namespace baton::console {

struct ConsoleConfig {
  RedisOptions redis;
  std::string store = "sqlite://baton-stats.db";
  std::string users_file;
  std::string listen = "127.0.0.1:8088";
  std::string web_dir;  // empty: the installed or built front end (FindWebDir)
  bool read_only = false;
  std::chrono::minutes session_idle{480};
  bool cookie_secure = false;
  // Origins (scheme://host[:port]) a browser may send besides the console's own (the Host header
  // the request came with): the public address behind a reverse proxy.
  std::vector<std::string> allowed_origins;
  std::chrono::milliseconds live_interval{1000};
  std::string log_level = "info";
};

struct ParsedConsoleCommandLine {
  std::optional<ConsoleConfig> config;  // none: exit with exit_code (help, hash-password, error)
  int exit_code = 0;
};

// Also runs the `hash-password` subcommand (reads a password on stdin, prints its hash).
ParsedConsoleCommandLine ParseConsoleCommandLine(int argc, const char* const* argv);

// The front end's directory: `configured` when set, else <exe>/../share/baton/console-web, else
// the build tree's console-web. "" when none holds an index.html.
std::string FindWebDir(const std::string& configured);

}  // namespace baton::console
