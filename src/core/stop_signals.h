#pragma once
// How Baton's programs (batond, baton-collector, baton-console) stop: SIGTERM and SIGINT are
// blocked in every thread and taken by sigwait() on one thread, so no work runs inside a signal
// handler; SIGPIPE is ignored (a client that hangs up must not kill a server).
#include <signal.h>

#include <atomic>
#include <functional>
#include <thread>

namespace baton::internal {

class StopSignals {
 public:
  // Blocks the signals in the calling thread: construct it first in main(), before any thread
  // starts (threads inherit the mask).
  StopSignals();
  ~StopSignals() { Finish(); }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Calls on_signal(signal number) on a thread of its own when SIGTERM or SIGINT arrives.
  void OnSignal(std::function<void(int)> on_signal);
  // Wakes and joins OnSignal's thread, which then does not call on_signal: call it before what
  // on_signal uses is destroyed. Idempotent.
  void Finish();
  // Blocks the calling thread until SIGTERM or SIGINT arrives; returns it.
  int Wait();

 private:
  sigset_t signals_;
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

}  // namespace baton::internal
