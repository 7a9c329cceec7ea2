// baton-collector: collects every namespace's task events into a store (SQLite or PostgreSQL) and
// serves the stats API and Prometheus metrics. See docs/collector.md.
#include <spdlog/spdlog.h>

#include "collector.h"
#include "collector_config.h"
#include "core/stop_signals.h"

int main(int argc, char** argv) {
  auto parsed = baton::collector::ParseCollectorCommandLine(argc, argv);
  if (!parsed.config) return parsed.exit_code;
  spdlog::set_level(spdlog::level::from_str(parsed.config->log_level));
  // Every line reaches the log at once, also when stdout is a file or a pipe.
  spdlog::flush_on(spdlog::level::trace);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ baton-collector: %v");

  baton::internal::StopSignals stop_signals;  // before any thread starts
  baton::collector::Collector collector(*parsed.config);
  stop_signals.OnSignal([&collector](int) {
    spdlog::info("signal received, stopping");
    collector.RequestStop();
  });
  baton::Status status = collector.Run();
  stop_signals.Finish();  // before collector goes
  if (!status.ok()) {
    spdlog::critical("baton-collector failed: {}", status.ToString());
    return status.code() == baton::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}
