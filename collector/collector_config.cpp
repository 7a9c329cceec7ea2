#include "collector_config.h"

#include <CLI/CLI.hpp>

namespace baton::collector {

ParsedCollectorCommandLine ParseCollectorCommandLine(int argc, const char* const* argv) {
  CLI::App app{
      "baton-collector: collects every namespace's task events into a store and serves "
      "the stats API and Prometheus metrics (docs/collector.md)"};
  app.set_version_flag("--version", std::string("baton-collector ") + BATON_VERSION);
  CollectorConfig config;
  std::int64_t block_ms = config.block.count(), claim_ms = config.claim_idle.count(),
               sample_ms = config.sample_interval.count(),
               discovery_ms = config.discovery_interval.count(),
               scan_ms = config.scan_interval.count();
  app.add_option("--redis", config.redis.url, "Redis URL of the queues")
      ->envname("BATON_REDIS_URL")
      ->capture_default_str();
  app.add_option("--store", config.store,
                 "sqlite:///path/stats.db (or a path ending in .db) or "
                 "postgresql://user:password@host:port/db")
      ->envname("BATON_STORE")
      ->capture_default_str();
  app.add_option("--listen", config.listen, "host:port of the HTTP API and /metrics ('' = none)")
      ->envname("BATON_COLLECTOR_LISTEN")
      ->capture_default_str();
  app.add_option("--name", config.name,
                 "this collector's consumer name (default collector:<host>:<pid>); keep it "
                 "across restarts to take back its own unacked entries at once")
      ->envname("BATON_COLLECTOR_NAME");
  app.add_option("--batch", config.batch, "entries read per stream per read")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--block-ms", block_ms, "longest wait for new events per read")
      ->check(CLI::Range(10, 60000))
      ->capture_default_str();
  app.add_option("--claim-idle-ms", claim_ms,
                 "another collector's unacked entries idle this long are taken over")
      ->check(CLI::Range(100, 86400000))
      ->capture_default_str();
  app.add_option("--sample-interval-ms", sample_ms, "queue sampling period (0 = none)")
      ->check(CLI::Range(0, 3600000))
      ->capture_default_str();
  app.add_option("--discovery-interval-ms", discovery_ms, "re-read of the namespace directory")
      ->check(CLI::Range(100, 3600000))
      ->capture_default_str();
  app.add_option("--scan-interval-ms", scan_ms, "SCAN for namespaces nobody registered")
      ->check(CLI::Range(1000, 86400000))
      ->capture_default_str();
  app.add_option("--retain-events-days", config.retention.events_days,
                 "raw events, runs and task states are kept this long")
      ->check(CLI::Range(1, 3650))
      ->capture_default_str();
  app.add_option("--retain-minutes-days", config.retention.minutes_days,
                 "per-minute rollups and queue samples are kept this long (daily totals forever)")
      ->check(CLI::Range(1, 3650))
      ->capture_default_str();
  app.add_option("--log-level", config.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->envname("BATON_LOG_LEVEL")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return {std::nullopt, app.exit(e)};
  }
  config.block = std::chrono::milliseconds(block_ms);
  config.claim_idle = std::chrono::milliseconds(claim_ms);
  config.sample_interval = std::chrono::milliseconds(sample_ms);
  config.discovery_interval = std::chrono::milliseconds(discovery_ms);
  config.scan_interval = std::chrono::milliseconds(scan_ms);
  return {config, 0};
}

}  // namespace baton::collector
