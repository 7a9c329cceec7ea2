#include "core/stop_signals.h"

#include <pthread.h>

namespace baton::internal {

StopSignals::StopSignals() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGTERM);
  sigaddset(&signals_, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

void StopSignals::Finish() {
  if (!thread_.joinable()) return;
  // The program ends without a signal (an error): wake the waiting thread so it can be joined.
  finished_ = true;
  pthread_kill(thread_.native_handle(), SIGTERM);
  thread_.join();
}

void StopSignals::OnSignal(std::function<void(int)> on_signal) {
  thread_ = std::thread([this, on_signal = std::move(on_signal)] {
    int sig = 0;
    if (sigwait(&signals_, &sig) == 0 && !finished_.load()) on_signal(sig);
  });
}

int StopSignals::Wait() {
  int sig = 0;
  while (sigwait(&signals_, &sig) != 0) {
  }
  return sig;
}

}  // namespace baton::internal
