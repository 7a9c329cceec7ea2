// batond: Baton's scheduler daemon. See docs/batond.md.
#include <signal.h>

#include "config.h"
#include "core/stop_signals.h"
#include "daemon.h"
#include "log.h"

int main(int argc, char** argv) {
  using baton::batond::Log;
  baton::batond::ParsedCommandLine parsed = baton::batond::ParseCommandLine(argc, argv);
  if (!parsed.config) return parsed.exit_code;
  const baton::batond::DaemonConfig& config = *parsed.config;
  baton::batond::SetupLogging(*baton::batond::ParseLogLevel(config.log_level),
                              *baton::batond::ParseLogFormat(config.log_format));

  // Blocks SIGTERM/SIGINT before any thread starts; one thread takes them and asks the daemon to
  // stop: no work inside a signal handler.
  baton::internal::StopSignals stop_signals;
  baton::batond::Daemon daemon(config);
  stop_signals.OnSignal([&daemon](int sig) {
    Log(spdlog::level::info, "signal received, shutting down",
        {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
    daemon.RequestStop();
  });
  baton::Status status = daemon.Run();
  stop_signals.Finish();  // before daemon goes
  if (!status.ok()) {
    Log(spdlog::level::critical, "batond failed", {{"error", status.ToString()}});
    return status.code() == baton::StatusCode::kVersionMismatch ? 3 : 1;
  }
  return 0;
}
