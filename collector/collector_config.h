#pragma once
// baton-collector's settings, from flags and BATON_* environment variables (docs/collector.md).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "baton/redis_options.h"
#include "retention.h"

namespace baton::collector {

struct CollectorConfig {
  RedisOptions redis;
  std::string store = "sqlite://baton-stats.db";
  std::string listen = "127.0.0.1:7070";  // HTTP API and /metrics; empty = none
  std::string name;                       // consumer name; default collector:<host>:<pid>
  int batch = 1000;                       // entries per stream per read (1..10000)
  std::chrono::milliseconds block{1000};
  std::chrono::milliseconds claim_idle{30000};
  std::chrono::milliseconds sample_interval{5000};  // 0 = no queue sampling
  std::chrono::milliseconds discovery_interval{2000};
  std::chrono::milliseconds scan_interval{30000};
  RetentionPolicy retention;
  std::string log_level = "info";
};

struct ParsedCollectorCommandLine {
  std::optional<CollectorConfig> config;
  int exit_code = 0;
};

ParsedCollectorCommandLine ParseCollectorCommandLine(int argc, const char* const* argv);

}  // namespace baton::collector
