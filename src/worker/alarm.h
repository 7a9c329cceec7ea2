#pragma once
// A wake-up call between threads: one thread sleeps until a time point (or for good), others ring
// it early when something it waits for changed (a new attempt deadline, an earlier retry). Lets
// the worker's background threads sleep exactly as long as there is nothing to do, instead of
// polling. Thread-safe.
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace baton::internal {

class Alarm {
 public:
  using Clock = std::chrono::steady_clock;

  // Wakes the sleeper (or makes its next sleep return at once).
  void Ring() {
    std::lock_guard<std::mutex> lock(mu_);
    rung_ = true;
    cv_.notify_all();
  }
  // Sleeps until `until`, a Ring() or Stop(); false once stopped. Clears the ring.
  bool SleepUntil(Clock::time_point until) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, until, [this] { return rung_ || stopped_; });
    rung_ = false;
    return !stopped_;
  }
  // Sleeps until a Ring() or Stop(); false once stopped.
  bool Sleep() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return rung_ || stopped_; });
    rung_ = false;
    return !stopped_;
  }
  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    cv_.notify_all();
  }
  bool stopped() {
    std::lock_guard<std::mutex> lock(mu_);
    return stopped_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool rung_ = false;
  bool stopped_ = false;
};

}  // namespace baton::internal
