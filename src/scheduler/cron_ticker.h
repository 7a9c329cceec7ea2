#pragma once
// The cron ticker: turns the cron jobs of the hash baton:cron (name -> JSON, cron/cron_job.h) into
// ordinary tracked tasks. It sleeps until the earliest next tick of all enabled jobs (at most
// `max_sleep`, so edits of the hash are seen without a restart) and wakes early on the channel
// baton:cron:changed, where `baton cron` publishes after every edit.
//
// Exactly one task per tick, with any number of tickers (several batond) on one Redis:
//  - each tick is enqueued through baton::Client with the deterministic id TickTaskId()
//    ("cron:<job>:<unix s>"); enqueue is idempotent on the id, so the tickers that lose the race
//    get the outcome kDuplicate and write nothing;
//  - the hash baton:cron:state (name -> unix seconds of the last tick handled: fired, or dropped by
//    the `skip` policy) is shared; it only moves forward, through the compare-and-set function
//    baton_v2_cron_mark, and it is written after the tick's task was enqueued, so a ticker that
//    dies in between leaves the tick due and another ticker enqueues it (a duplicate at worst,
//    which enqueue drops).
// Missed ticks (older than `grace` when a ticker sees them: no ticker ran) follow the job's
// policy (cron/cron_due.h): `skip` drops them, `run_once` fires one task for all of them.
// A job never seen before starts at the time it is first seen (no catch-up of its past).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "baton/client.h"
#include "baton/redis_options.h"
#include "baton/status.h"
#include "broker/keys.h"
#include "broker/protocol_gen.h"
#include "broker/redis_connection.h"
#include "broker/subscription.h"
#include "core/loop_log.h"
#include "cron/cron_job.h"
#include "cron/cron_schedule.h"

namespace baton::internal {

// Keys of the cron ticker (the definitions hash is Keys::kCron).
inline constexpr std::string_view kCronStateKey = Keys::kCronState;
inline constexpr std::string_view kCronChangedChannel = protocol::kChannelCronChanged;

// One tick enqueued (or found already enqueued) by RunOnce.
struct CronFire {
  std::string job;
  std::int64_t tick = 0;  // Unix seconds of the fire time
  std::string task_id;    // TickTaskId(job, tick)
  std::string ns;
  std::string task_type;
  bool duplicate = false;  // another ticker (or an earlier pass) had already enqueued it
  bool catch_up = false;   // a run_once task standing in for ticks missed while no ticker ran
};

// What one RunOnce pass did.
struct CronRunResult {
  std::vector<CronFire> fired;  // in job-name, then tick order
  // Jobs whose ticks were missed and dropped (`skip`) or folded into one catch-up task
  // (`run_once`): "name" -> the first missed tick (Unix seconds).
  std::map<std::string, std::int64_t> missed;
  // Definitions that do not parse or validate: "name" -> the reason. They are skipped.
  std::map<std::string, std::string> invalid;
  // Ticks that could not be enqueued because the task itself was refused (e.g. the payload is too
  // large): "name" -> the reason. The tick counts as handled (retrying would fail the same way).
  std::map<std::string, std::string> refused;
  int enabled_jobs = 0;
  // The earliest tick after `now` of any enabled job; nullopt when no job is enabled.
  std::optional<std::chrono::sys_seconds> next_fire;
};

class CronTicker {
 public:
  struct Options {
    RedisOptions redis;  // url, timeout
    // Longest sleep between two passes: how late an edit of baton:cron is seen when its
    // baton:cron:changed message was lost.
    std::chrono::milliseconds max_sleep{1000};
    // How late a tick may be seen and still count as on time (cron/cron_due.h).
    std::chrono::seconds grace{10};
    // Fire only the jobs of these namespaces; empty = every job.
    std::vector<std::string> namespaces;
    // Called on the loop thread after each pass that fired, missed, refused something, or whose
    // set of invalid definitions changed. May be empty.
    std::function<void(const CronRunResult&)> on_pass;
    // Where the loop reports an outage (Redis unreachable, ...; once when it starts, once when it
    // ends: the loop retries with backoff meanwhile). Empty: nothing is logged.
    LogFn log;
  };

  explicit CronTicker(Options options);
  ~CronTicker();  // Stop()s
  CronTicker(const CronTicker&) = delete;
  CronTicker& operator=(const CronTicker&) = delete;

  // Starts the loop thread (which connects, subscribes to baton:cron:changed and reconnects with
  // backoff by itself). Fails only with kInvalidArgument for a bad URL or kConflict when started.
  Status Start();
  // Stops the loop and waits for it (a pass in progress finishes first). Idempotent.
  void Stop();

  // One pass at time `now` (tests pass a controlled time; the loop passes the Redis server's
  // TIME): reads baton:cron and baton:cron:state, enqueues every due tick, advances the state.
  // kUnavailable when Redis cannot be reached. Thread-safe (serialised with the loop).
  StatusOr<CronRunResult> RunOnce(std::chrono::system_clock::time_point now);

  // Ticks enqueued by this object (not counting duplicates) since construction.
  std::uint64_t fired_total() const { return fired_total_.load(); }

 private:
  struct CachedJob {
    std::string json;  // the definition it was parsed from
    std::optional<CronJob> job;
    std::optional<CronSchedule> schedule;
    std::string error;  // why it is invalid, when job is empty
  };

  Status EnsureConnected();  // mu_ held
  StatusOr<CronRunResult> RunOnceLocked(std::chrono::system_clock::time_point now);
  const CachedJob& Parse(const std::string& name, const std::string& json);  // mu_ held
  StatusOr<std::chrono::system_clock::time_point> ServerNow();               // mu_ held
  void Loop();
  // Waits up to `timeout` for Stop(), a baton:cron:changed message or the timeout.
  void Wait(std::chrono::milliseconds timeout);

  Options options_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  int wake_fd_ = -1;  // eventfd: Stop() writes to it to interrupt Wait()

  std::mutex mu_;  // guards everything below (one pass at a time)
  std::unique_ptr<RedisConnection> conn_;
  std::unique_ptr<Client> client_;
  std::map<std::string, CachedJob> cache_;

  std::atomic<std::uint64_t> fired_total_{0};

  std::unique_ptr<Subscription> listener_;  // baton:cron:changed; loop thread only
};

}  // namespace baton::internal
