#pragma once
// The collector process's own counters, shared by its threads (atomics and one mutex-guarded
// map), exported on /metrics next to what the store holds.
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace baton::collector {

struct NamespaceLag {
  std::int64_t behind = 0;      // entries the group has yet to deliver
  std::int64_t lost_total = 0;  // events trimmed before any collector read them
};

struct CollectorStats {
  std::atomic<std::int64_t> events_stored{0};     // rows inserted into the store
  std::atomic<std::int64_t> events_duplicate{0};  // rows the store already had (replays)
  std::atomic<std::int64_t> entries_rejected{0};  // entries that are not well-formed events
  std::atomic<std::int64_t> batches{0};           // store transactions committed
  std::atomic<std::int64_t> store_errors{0};      // failed store writes (retried)
  std::atomic<std::int64_t> redis_errors{0};      // failed Redis reads (retried)
  std::atomic<std::int64_t> samples{0};           // queue samples taken
  std::atomic<std::int64_t> ingest_micros{0};     // time spent in store writes
  std::atomic<bool> redis_up{false};              // the ingest loop's Redis connection works

  void SetLag(const std::string& ns, NamespaceLag lag) {
    std::lock_guard<std::mutex> lock(mu_);
    lag_[ns] = lag;
  }
  std::map<std::string, NamespaceLag> Lag() const {
    std::lock_guard<std::mutex> lock(mu_);
    return lag_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, NamespaceLag> lag_;
};

}  // namespace baton::collector
