#pragma once
// Reconnect backoff shared by Baton's background loops (promoter, reaper, subscriber, worker):
// 100 ms, doubling on every consecutive failure, capped at 5 s; Reset() after a success.
#include <algorithm>
#include <chrono>

namespace baton::internal {

class Backoff {
 public:
  explicit Backoff(std::chrono::milliseconds initial = std::chrono::milliseconds(100),
                   std::chrono::milliseconds max = std::chrono::milliseconds(5000))
      : initial_(initial), max_(max), next_(initial) {}

  // The delay to wait before the next attempt; each call doubles the following one.
  std::chrono::milliseconds Next() {
    std::chrono::milliseconds current = next_;
    next_ = std::min(next_ * 2, max_);
    return current;
  }
  // The delay the next call of Next() returns.
  std::chrono::milliseconds Peek() const { return next_; }
  void Reset() { next_ = initial_; }

 private:
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds max_;
  std::chrono::milliseconds next_;
};

}  // namespace baton::internal
