#pragma once
// The lease reaper: takes back tasks whose lease expired (the worker crashed, hung or lost its
// connection) with FCALL baton_reclaim, for every consumer group of every served stream. Each
// reclaimed task counts as a failed attempt of kind lease_expired and follows the retry policy.
// Run by batond and, for its own types, by a Worker with maintenance on; several reapers may run
// at once (the function is atomic).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "baton/status.h"
#include "baton/worker.h"
#include "broker/redis_connection.h"
#include "scheduler/type_ref.h"

namespace baton::internal {

struct ReapResult {
  std::int64_t reclaimed = 0;
  std::int64_t retried = 0;
  std::int64_t dead = 0;
};

class Reaper {
 public:
  // One served type with the retry policy its reclaimed tasks follow.
  struct Target {
    TypeRef type;
    RetryPolicy retry;
  };
  struct Options {
    std::string redis_url = "redis://127.0.0.1:6379";
    std::chrono::milliseconds lease{15000};  // min idle time of a pending entry to reclaim it
    int count = 500;                         // entries per baton_reclaim call
    std::chrono::milliseconds interval{1000};
    std::size_t events_maxlen = 100000;
    std::string name = "reaper";  // recorded in the events as the worker of the transition
    // The types to serve; empty = every type of every namespace (rediscovered each pass), with
    // default_retry.
    std::vector<Target> targets;
    RetryPolicy default_retry;
  };

  explicit Reaper(Options options);
  ~Reaper();  // Stop()s
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  // Connects and starts the loop thread. kInvalidArgument (bad URL) or kUnavailable; once
  // started, the loop reconnects by itself.
  Status Start();
  void Stop();  // idempotent

  // Reclaims every expired lease of one type (all its consumer groups; a missing stream has none),
  // calling baton_reclaim until a call returns fewer than `count`. Thread-safe.
  StatusOr<ReapResult> RunOnce(const std::string& ns, const std::string& type,
                               const RetryPolicy& retry);
  StatusOr<ReapResult> RunOnce(const std::string& ns, const std::string& type);  // default_retry
  // One pass over all served types: the sum.
  StatusOr<ReapResult> RunPass();

 private:
  Status EnsureConnected();  // mu_ held
  StatusOr<ReapResult> RunOnceLocked(const TypeRef& type, const RetryPolicy& retry);
  void Loop();

  Options options_;
  std::thread thread_;

  std::mutex mu_;  // guards conn_ and rng_
  std::unique_ptr<RedisConnection> conn_;
  std::mt19937_64 rng_;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
};

}  // namespace baton::internal
