#pragma once
// A small pool of connections (store or Redis clients) that are not thread-safe: each request
// takes one for its duration. A connection whose use failed with kUnavailable is dropped, and the
// next Acquire() opens a fresh one.
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "baton/status.h"

namespace baton::console {

template <typename T>
class ResourcePool {
 public:
  using Opener = std::function<StatusOr<std::unique_ptr<T>>()>;

  ResourcePool(Opener open, std::size_t size) : open_(std::move(open)), size_(size) {}

  // Runs `use` with a pooled T (opened when none is idle), waiting while all `size` are busy.
  // `use` returns a StatusOr or a Status.
  template <typename F>
  auto With(F use) -> decltype(use(std::declval<T&>())) {
    std::unique_ptr<T> item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return !idle_.empty() || open_count_ < size_; });
      if (!idle_.empty()) {
        item = std::move(idle_.back());
        idle_.pop_back();
      } else {
        ++open_count_;
      }
    }
    if (!item) {
      auto opened = open_();
      if (!opened.ok()) {
        Release(nullptr);
        return opened.status();
      }
      item = std::move(opened).value();
    }
    auto result = [&] {
      try {
        return use(*item);
      } catch (...) {
        Release(nullptr);  // its slot must not leak: the pool would run dry
        throw;
      }
    }();
    const bool broken = StatusOf(result).code() == StatusCode::kUnavailable;
    Release(broken ? nullptr : std::move(item));
    return result;
  }

 private:
  static const Status& StatusOf(const Status& s) { return s; }
  template <typename V>
  static Status StatusOf(const StatusOr<V>& s) {
    return s.status();
  }

  void Release(std::unique_ptr<T> item) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (item) {
        idle_.push_back(std::move(item));
      } else {
        --open_count_;
      }
    }
    cv_.notify_one();
  }

  Opener open_;
  std::size_t size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<T>> idle_;
  std::size_t open_count_ = 0;  // idle + in use
};

}  // namespace baton::console
