#pragma once
// batond's settings, read from command-line flags, a config file (INI/TOML, `--config`) and
// environment variables (BATON_*), in that order of precedence (CLI11's rule: a flag beats the
// file, the file beats the environment). docs/batond.md lists every setting.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "baton/redis_options.h"
#include "baton/status.h"

namespace baton::batond {

// Leases are not a batond setting: a task's lease is kept in Redis (its delivery time in the
// consumer group, renewed by each heartbeat, plus the lease length its worker asked for, or the
// namespace setting lease_ms), and batond only takes back expired ones.
struct DaemonConfig {
  RedisOptions redis;                   // url, timeout
  std::vector<std::string> namespaces;  // empty = every namespace that has task types
  int promote_batch = 1000;             // tasks moved per baton_v2_promote call (1..10000)
  // Longest time between two checks of a type for expired leases (it is checked sooner when a
  // lease ends sooner).
  std::chrono::milliseconds reaper_interval{1000};
  int reclaim_batch = 100;                     // leases taken back per baton_v2_reclaim call
  std::chrono::milliseconds retry_base{2000};  // backoff of lease-expired attempts
  std::chrono::milliseconds retry_max{600000};
  // Re-read of the directory of namespaces and types (a safety net: new types are announced on
  // baton:v2:types and found at once).
  std::chrono::milliseconds discovery_interval{30000};
  // SCAN for namespaces nobody registered (also at start-up); without --namespaces only.
  std::chrono::seconds scan_interval{300};
  bool cron = true;
  std::chrono::seconds cron_grace{10};  // a tick seen later than this was missed (job policy)
  std::string health;                   // "host:port" of GET /healthz; empty = no health server
  std::string log_level = "info";
  std::string log_format = "text";
  bool load_functions = false;  // FUNCTION LOAD REPLACE the embedded library before starting
  std::string instance;         // name in logs and in reclaim events; default "batond:<host>:<pid>"
};

// The outcome of parsing the command line: either a config to run with, or an exit code (help
// and version were printed, or an error was printed to stderr).
struct ParsedCommandLine {
  std::optional<DaemonConfig> config;
  int exit_code = 0;
  std::string error;  // what was printed to stderr, when the command line was refused
};

// Parses flags, the config file and the environment, then checks every value (Validate()).
// Prints help / errors itself (CLI11), so main() only has to exit with `exit_code`.
ParsedCommandLine ParseCommandLine(int argc, const char* const* argv);

// Settings of older batond versions that protocol v2 removed: a flag, config file key or
// environment variable that still sets one is refused with this explanation (never ignored).
struct RemovedSetting {
  const char* name;  // flag / config key, without the dashes
  const char* env;
  const char* why;
};
const std::vector<RemovedSetting>& RemovedSettings();

// Checks ranges and formats; kInvalidArgument names the setting and the rule.
Status Validate(const DaemonConfig& config);

// The default instance name, "batond:<hostname>:<pid>".
std::string DefaultInstanceName();

}  // namespace baton::batond
