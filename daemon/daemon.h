#pragma once
// batond's wiring: the delayed-task promoter, the lease reaper and the cron ticker against one
// Redis, the directory of the (namespace, type) pairs they serve, plus the optional health server.
// Start-up waits (with backoff) for Redis and checks the functions library; after that every
// component reconnects by itself, so a Redis restart costs a pause, not a crash.
//
// Every namespace that has work is served, registered or not (docs/batond.md "Discovery"): one
// subscription to baton:v2:types and baton:v2:wakeup feeds the directory (and the promoter's
// wake-ups); Run()'s thread re-reads the directory every discovery interval and SCANs the keyspace
// for unregistered namespaces every scan interval (and at start-up), and registers what it finds.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "baton/status.h"
#include "config.h"
#include "core/loop_log.h"
#include "health_server.h"
#include "scheduler/cron_ticker.h"
#include "scheduler/promoter.h"
#include "scheduler/reaper.h"
#include "scheduler/type_directory.h"
#include "scheduler/wakeup_subscriber.h"

namespace baton::batond {

// The loops' log callback, writing through batond's logger (text or JSON).
internal::LogFn DaemonLogFn();

class Daemon {
 public:
  explicit Daemon(DaemonConfig config);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Runs until RequestStop(): starts the health server, waits for Redis, loads the functions
  // library when configured, checks its version, starts the components, then keeps the directory
  // of served types up to date on this thread. Returns OK after a requested stop; kVersionMismatch
  // when the library in Redis is not the one this build needs; kUnavailable when the health
  // address cannot be bound; kInvalidArgument for a bad setting.
  Status Run();
  // Asks Run() to stop and return (graceful: components finish their current pass). Thread-safe;
  // not async-signal-safe (call it from a signal-waiting thread, as main.cpp does).
  void RequestStop();

 private:
  // Blocks until Redis answers and the library is ready. kCancelled when a stop was requested.
  Status PrepareRedis();
  Status StartComponents();
  void StopComponents();
  // Connects conn_ when needed.
  Status EnsureConn();
  // Re-reads the directory (with a SCAN when `scan`); pokes the promoter when types were added.
  Status Discover(bool scan);
  // Registers and reads the namespaces first seen in messages.
  Status SyncNewNamespaces();
  // Checks the functions library; reloads it when configured to, else reports it missing (once).
  void CheckLibrary();
  void LogAdded(const std::vector<internal::TypeRef>& added, const char* how);
  void LogStats(bool force);
  // Wakes Run()'s loop (a new namespace to register, a lost subscription to make up for).
  void PokeRun(bool resync);
  nlohmann::json HealthDetails() const;

  DaemonConfig config_;
  internal::LogFn log_;

  std::mutex stop_mu_;  // guards the three flags below
  std::condition_variable stop_cv_;
  bool stop_requested_ = false;
  bool poked_ = false;
  bool resync_ = false;

  std::unique_ptr<HealthServer> health_;
  std::unique_ptr<internal::TypeDirectory> directory_;
  std::unique_ptr<internal::Promoter> promoter_;
  std::unique_ptr<internal::Reaper> reaper_;
  std::unique_ptr<internal::WakeupSubscriber> subscriber_;
  std::unique_ptr<internal::CronTicker> cron_;
  std::unique_ptr<internal::RedisConnection> conn_;  // discovery (Run's thread only)

  std::atomic<bool> running_{false};  // components started
  std::atomic<std::uint64_t> reclaimed_total_{0};
  std::atomic<std::uint64_t> reclaim_retried_total_{0};
  std::atomic<std::uint64_t> reclaim_dead_total_{0};
  std::atomic<std::uint64_t> promoted_total_{0};  // refreshed by Run()'s loop, read by /healthz
  std::atomic<std::uint64_t> served_types_{0};    // likewise
  internal::OutageLog discovery_outage_{"discovery"};
  bool library_missing_ = false;
  bool scan_refused_ = false;
  std::uint64_t logged_promoted_ = 0;
  std::uint64_t logged_reclaimed_ = 0;
  std::uint64_t logged_cron_ = 0;
  // Ticks fired by the cron tickers already stopped (Run()'s thread): the ticker owns its counter
  // and is destroyed before the final stats line; a restarted one counts from 0 again.
  std::uint64_t cron_fired_by_stopped_ = 0;
};

}  // namespace baton::batond
