// batond: Baton's scheduler daemon. See docs/batond.md.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "config.h"
#include "daemon.h"
#include "log.h"

int main(int argc, char** argv) {
  using baton::batond::Log;
  baton::batond::ParsedCommandLine parsed = baton::batond::ParseCommandLine(argc, argv);
  if (!parsed.config) return parsed.exit_code;
  const baton::batond::DaemonConfig& config = *parsed.config;
  baton::batond::SetupLogging(*baton::batond::ParseLogLevel(config.log_level),
                              *baton::batond::ParseLogFormat(config.log_format));

  // SIGTERM/SIGINT are blocked in every thread (threads inherit the mask) and taken by sigwait()
  // on one thread, which asks the daemon to stop: no work inside a signal handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A broken health-check connection must not kill the daemon.
  signal(SIGPIPE, SIG_IGN);

  baton::batond::Daemon daemon(config);
  std::atomic<bool> finished{false};
  std::thread signal_thread([&daemon, &finished, signals] {
    int sig = 0;
    if (sigwait(&signals, &sig) == 0 && !finished.load()) {
      Log(spdlog::level::info, "signal received, shutting down",
          {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
    }
    daemon.RequestStop();
  });

  baton::Status status = daemon.Run();
  // Run() may return without a signal (an error): wake the signal thread so it can be joined.
  finished = true;
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  if (!status.ok()) {
    Log(spdlog::level::critical, "batond failed", {{"error", status.ToString()}});
    return status.code() == baton::StatusCode::kVersionMismatch ? 3 : 1;
  }
  return 0;
}
