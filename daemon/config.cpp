#include "config.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "baton/task.h"
#include "broker/redis_connection.h"
#include "health_server.h"
#include "log.h"

namespace baton::batond {

std::string DefaultInstanceName() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string("batond:") + (host[0] ? host : "localhost") + ":" + std::to_string(getpid());
}

const std::vector<RemovedSetting>& RemovedSettings() {
  static const std::vector<RemovedSetting> kRemoved = {
      {"lease-ms", "BATON_LEASE_MS",
       "removed in protocol v2: a task's lease is kept in Redis, its length set by the worker "
       "that holds it (its lease option) or by the namespace setting lease_ms "
       "(Client::ConfigureNamespace), and batond only takes back tasks whose lease ended. "
       "Delete this setting"},
      {"events-maxlen", "BATON_EVENTS_MAXLEN",
       "removed in protocol v2: the events cap is the namespace setting events_maxlen "
       "(Client::ConfigureNamespace), the same for every client, worker and batond. Delete this "
       "setting"},
  };
  return kRemoved;
}

Status Validate(const DaemonConfig& c) {
  auto url = internal::RedisEndpoint::Parse(c.redis.url);
  if (!url.ok()) return Status::InvalidArgument("redis-url", url.status().message());
  for (const std::string& ns : c.namespaces) {
    if (!IsValidName(ns)) {
      return Status::InvalidArgument("namespaces",
                                     "'" + ns + "' must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");
    }
  }
  if (c.promote_batch < 1 || c.promote_batch > 10000) {
    return Status::InvalidArgument("promote-batch", "must be 1..10000");
  }
  if (c.reclaim_batch < 1 || c.reclaim_batch > 1000) {
    return Status::InvalidArgument("reclaim-batch", "must be 1..1000");
  }
  if (c.reaper_interval.count() < 10 || c.reaper_interval.count() > 60000) {
    return Status::InvalidArgument("reaper-interval-ms", "must be 10..60000");
  }
  if (c.retry_base.count() < 1) return Status::InvalidArgument("retry-base-ms", "must be >= 1");
  if (c.retry_max < c.retry_base) {
    return Status::InvalidArgument("retry-max-ms", "must be >= retry-base-ms");
  }
  if (c.discovery_interval.count() < 100) {
    return Status::InvalidArgument("discovery-interval-ms", "must be >= 100");
  }
  if (c.scan_interval.count() < 10 || c.scan_interval.count() > 86400) {
    return Status::InvalidArgument("scan-interval-s", "must be 10..86400");
  }
  if (c.cron_grace.count() < 1 || c.cron_grace.count() > 86400) {
    return Status::InvalidArgument("cron-grace-s", "must be 1..86400");
  }
  if (!c.health.empty()) {
    std::string host;
    int port = 0;
    Status s = ParseListenAddress(c.health, &host, &port);
    if (!s.ok()) return s;
  }
  if (auto level = ParseLogLevel(c.log_level); !level.ok()) return level.status();
  if (auto format = ParseLogFormat(c.log_format); !format.ok()) return format.status();
  if (c.instance.empty()) return Status::InvalidArgument("instance", "must not be empty");
  return Status::Ok();
}

ParsedCommandLine ParseCommandLine(int argc, const char* const* argv) {
  DaemonConfig c;
  c.instance = DefaultInstanceName();
  long long reaper_ms = c.reaper_interval.count();
  long long retry_base_ms = c.retry_base.count();
  long long retry_max_ms = c.retry_max.count();
  long long discovery_ms = c.discovery_interval.count();
  long long scan_s = c.scan_interval.count();
  long long cron_grace_s = c.cron_grace.count();

  CLI::App app{
      "batond: Baton's scheduler daemon. Promotes due delayed and retrying tasks, takes back tasks "
      "whose lease ended, fires cron jobs, for every namespace that has work. Run any "
      "number against one Redis.",
      "batond"};
  app.set_version_flag("--version", std::string("batond ") + BATON_VERSION);
  // CLI11 2.1 reads the environment after the config file, so BATON_CONFIG is applied here, as the
  // default file name; set, the file must exist.
  const char* env_config = std::getenv("BATON_CONFIG");
  const bool has_env_config = env_config != nullptr && *env_config != '\0';
  app.set_config("--config", has_env_config ? env_config : "",
                 "Read settings from this INI/TOML file (keys = long flag names; env BATON_CONFIG)",
                 has_env_config);
  app.add_option("--redis-url,--redis", c.redis.url,
                 "Redis to serve: redis://[user:password@]host:port[/db], unix:///path, or "
                 "redis+cluster://host:port[,host:port...] (docs/cluster.md)")
      ->envname("BATON_REDIS_URL")
      ->capture_default_str();
  app.add_option("--namespaces", c.namespaces,
                 "Namespaces to serve, comma separated (default: every namespace that has task "
                 "types, registered or not)")
      ->envname("BATON_NAMESPACES")
      ->delimiter(',');
  app.add_option("--promote-batch", c.promote_batch, "Tasks moved per baton_v2_promote call")
      ->envname("BATON_PROMOTE_BATCH")
      ->capture_default_str();
  app.add_option("--reaper-interval-ms", reaper_ms,
                 "Longest time between two checks of a task type for expired leases")
      ->envname("BATON_REAPER_INTERVAL_MS")
      ->capture_default_str();
  app.add_option("--reclaim-batch", c.reclaim_batch,
                 "Expired leases taken back per baton_v2_reclaim call")
      ->envname("BATON_RECLAIM_BATCH")
      ->capture_default_str();
  app.add_option("--retry-base-ms", retry_base_ms,
                 "Backoff base of an attempt that lost its lease (delay = base * 2^(n-1) + jitter)")
      ->envname("BATON_RETRY_BASE_MS")
      ->capture_default_str();
  app.add_option("--retry-max-ms", retry_max_ms, "Backoff cap of an attempt that lost its lease")
      ->envname("BATON_RETRY_MAX_MS")
      ->capture_default_str();
  app.add_option("--discovery-interval-ms", discovery_ms,
                 "How often the namespaces and task types are re-read (new types are announced on "
                 "baton:v2:types and served at once; this is the safety net)")
      ->envname("BATON_DISCOVERY_INTERVAL_MS")
      ->capture_default_str();
  app.add_option("--scan-interval-s", scan_s,
                 "How often the keyspace is scanned for namespaces nobody registered (also at "
                 "start-up; not with --namespaces)")
      ->envname("BATON_SCAN_INTERVAL_S")
      ->capture_default_str();
  app.add_flag("--cron,!--no-cron", c.cron, "Fire the cron jobs of baton:cron (default on)")
      ->envname("BATON_CRON");
  app.add_option("--cron-grace-s", cron_grace_s,
                 "A cron tick seen later than this counts as missed and follows the job's "
                 "`missed` policy (skip / run_once)")
      ->envname("BATON_CRON_GRACE_S")
      ->capture_default_str();
  app.add_option("--health", c.health,
                 "Serve GET /healthz on host:port (e.g. 127.0.0.1:8089; default: off)")
      ->envname("BATON_HEALTH");
  app.add_option("--log-level", c.log_level, "trace, debug, info, warn, error, critical, off")
      ->envname("BATON_LOG_LEVEL")
      ->capture_default_str();
  app.add_option("--log-format", c.log_format, "text (key=value) or json (one object per line)")
      ->envname("BATON_LOG_FORMAT")
      ->capture_default_str();
  app.add_flag("--load-functions", c.load_functions,
               "Load (or upgrade) the Redis Functions library before starting")
      ->envname("BATON_LOAD_FUNCTIONS");
  app.add_option("--instance", c.instance, "This instance's name in logs and reclaim events")
      ->envname("BATON_INSTANCE")
      ->capture_default_str();
  // Removed settings stay known (hidden) so that they are refused with an explanation instead of
  // CLI11's "unknown option" or, for an environment variable, silence.
  std::vector<std::string> removed_values(RemovedSettings().size());
  std::vector<CLI::Option*> removed_options;
  for (std::size_t i = 0; i < RemovedSettings().size(); ++i) {
    const RemovedSetting& r = RemovedSettings()[i];
    removed_options.push_back(
        app.add_option(std::string("--") + r.name, removed_values[i])->envname(r.env)->group(""));
  }

  // A misspelt key in the config file is an error, not a silently ignored setting.
  app.allow_config_extras(CLI::config_extras_mode::error);

  ParsedCommandLine result;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // app.exit() prints help/version to stdout or the error to stderr; every error exits with 2.
    result.exit_code = app.exit(e) == 0 ? 0 : 2;
    if (result.exit_code != 0) result.error = e.what();
    return result;
  }
  for (std::size_t i = 0; i < removed_options.size(); ++i) {
    if (removed_options[i]->count() == 0) continue;
    const RemovedSetting& r = RemovedSettings()[i];
    result.error = std::string(r.name) + " (flag --" + r.name + ", config key " + r.name +
                   ", environment " + r.env + "): " + r.why;
    std::fprintf(stderr, "batond: %s\n", result.error.c_str());
    result.exit_code = 2;
    return result;
  }
  c.reaper_interval = std::chrono::milliseconds(reaper_ms);
  c.retry_base = std::chrono::milliseconds(retry_base_ms);
  c.retry_max = std::chrono::milliseconds(retry_max_ms);
  c.discovery_interval = std::chrono::milliseconds(discovery_ms);
  c.scan_interval = std::chrono::seconds(scan_s);
  c.cron_grace = std::chrono::seconds(cron_grace_s);
  Status valid = Validate(c);
  if (!valid.ok()) {
    result.error = valid.message();
    std::fprintf(stderr, "batond: %s\n", valid.message().c_str());
    result.exit_code = 2;
    return result;
  }
  result.config = std::move(c);
  return result;
}

}  // namespace baton::batond
