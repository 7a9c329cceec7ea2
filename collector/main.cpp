// baton-collector: collects every namespace's task events into a store (SQLite or PostgreSQL) and
// serves the stats API and Prometheus metrics. See docs/collector.md.
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <thread>

#include "collector.h"
#include "collector_config.h"

int main(int argc, char** argv) {
  auto parsed = baton::collector::ParseCollectorCommandLine(argc, argv);
  if (!parsed.config) return parsed.exit_code;
  spdlog::set_level(spdlog::level::from_str(parsed.config->log_level));
  // Every line reaches the log at once, also when stdout is a file or a pipe.
  spdlog::flush_on(spdlog::level::trace);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ baton-collector: %v");

  // SIGTERM/SIGINT are taken by sigwait() on one thread, which asks the collector to stop.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  baton::collector::Collector collector(*parsed.config);
  std::atomic<bool> finished{false};
  std::thread signal_thread([&collector, &finished, signals] {
    int sig = 0;
    if (sigwait(&signals, &sig) == 0 && !finished.load()) spdlog::info("signal received, stopping");
    collector.RequestStop();
  });
  baton::Status status = collector.Run();
  finished = true;
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  if (!status.ok()) {
    spdlog::critical("baton-collector failed: {}", status.ToString());
    return status.code() == baton::StatusCode::kInvalidArgument ? 2 : 1;
  }
  return 0;
}
