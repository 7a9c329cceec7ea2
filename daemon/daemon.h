#pragma once
// batond's wiring: the delayed-task promoter, the lease reaper and the cron ticker against one
// Redis, plus the optional health server. Start-up waits (with backoff) for Redis and checks the
// functions library; after that every component reconnects by itself, so a Redis restart costs a
// pause, not a crash.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "baton/status.h"
#include "config.h"
#include "health_server.h"
#include "scheduler/cron_ticker.h"
#include "scheduler/promoter.h"
#include "scheduler/reaper.h"
#include "scheduler/type_ref.h"

namespace baton::batond {

class Daemon {
 public:
  explicit Daemon(DaemonConfig config);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Runs until RequestStop(): starts the health server, waits for Redis, loads the functions
  // library when configured, checks its version, starts the components, then reaps leases and
  // rediscovers types on this thread. Returns OK after a requested stop; kVersionMismatch when the
  // library in Redis is not the one this build needs; kUnavailable when the health address cannot
  // be bound; kInvalidArgument for a bad setting.
  Status Run();
  // Asks Run() to stop and return (graceful: components finish their current pass). Thread-safe;
  // not async-signal-safe (call it from a signal-waiting thread, as main.cpp does).
  void RequestStop();

 private:
  // Blocks until Redis answers and the library is ready. kCancelled when a stop was requested.
  Status PrepareRedis();
  Status StartComponents();
  void StopComponents();
  // The (ns, type) pairs of the configured namespaces (config_.namespaces not empty).
  StatusOr<std::vector<internal::TypeRef>> DiscoverServedTypes();
  // With configured namespaces, (re)starts the promoter when the set of their types changed.
  void RefreshServedTypes();
  // One reaper pass over the served types; false when it failed (Redis unreachable).
  bool ReapOnce();
  void LogStats(bool force);
  // Sleeps up to `ms`; true when a stop was requested.
  bool WaitForStop(std::chrono::milliseconds ms);
  nlohmann::json HealthDetails() const;

  DaemonConfig config_;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_requested_ = false;

  std::unique_ptr<HealthServer> health_;
  std::unique_ptr<internal::Promoter> promoter_;
  std::unique_ptr<internal::Reaper> reaper_;
  std::unique_ptr<internal::CronTicker> cron_;
  std::unique_ptr<internal::RedisConnection> conn_;  // discovery (Run's thread only)

  // Served types when namespaces are configured (empty config_.namespaces: all, found by the
  // components themselves each pass).
  std::vector<internal::TypeRef> served_;
  bool served_known_ = false;

  std::atomic<bool> running_{false};  // components started
  std::atomic<std::uint64_t> reclaimed_total_{0};
  std::atomic<std::uint64_t> reclaim_retried_total_{0};
  std::atomic<std::uint64_t> reclaim_dead_total_{0};
  std::atomic<std::uint64_t> promoted_seen_{0};   // promoted_total of replaced promoters
  std::atomic<std::uint64_t> promoted_total_{0};  // refreshed by Run()'s loop, read by /healthz
  bool reaper_ok_ = true;
  std::uint64_t logged_promoted_ = 0;
  std::uint64_t logged_reclaimed_ = 0;
  std::uint64_t logged_cron_ = 0;
};

}  // namespace baton::batond
