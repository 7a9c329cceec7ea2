#pragma once
// batond's settings, read from command-line flags, a config file (INI/TOML, `--config`) and
// environment variables (BATON_*), in that order of precedence (CLI11's rule: a flag beats the
// file, the file beats the environment). docs/batond.md lists every setting.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "baton/status.h"

namespace baton::batond {

struct DaemonConfig {
  std::string redis_url = "redis://127.0.0.1:6379";
  std::vector<std::string> namespaces;  // empty = every namespace in baton:namespaces
  std::chrono::milliseconds lease{15000};
  int promote_batch = 1000;                         // tasks moved per baton_promote call
  std::chrono::milliseconds reaper_interval{1000};  // how often every group is checked
  int reclaim_batch = 100;                          // entries taken back per baton_reclaim call
  std::chrono::milliseconds retry_base{2000};       // backoff of lease-expired attempts
  std::chrono::milliseconds retry_max{600000};
  std::chrono::milliseconds discovery_interval{5000};  // re-read namespaces and types
  bool cron = true;
  std::chrono::seconds cron_grace{10};  // a tick seen later than this was missed (job policy)
  std::string health;                   // "host:port" of GET /healthz; empty = no health server
  std::string log_level = "info";
  std::string log_format = "text";
  bool load_functions = false;  // FUNCTION LOAD REPLACE the embedded library before starting
  std::string instance;         // name in logs and in reclaim events; default "batond:<host>:<pid>"
  std::size_t events_maxlen = 100000;
};

// The outcome of parsing the command line: either a config to run with, or an exit code (help
// and version were printed, or an error was printed to stderr).
struct ParsedCommandLine {
  std::optional<DaemonConfig> config;
  int exit_code = 0;
};

// Parses flags, the config file and the environment, then checks every value (Validate()).
// Prints help / errors itself (CLI11), so main() only has to exit with `exit_code`.
ParsedCommandLine ParseCommandLine(int argc, const char* const* argv);

// Checks ranges and formats; kInvalidArgument names the setting and the rule.
Status Validate(const DaemonConfig& config);

// The default instance name, "batond:<hostname>:<pid>".
std::string DefaultInstanceName();

}  // namespace baton::batond
