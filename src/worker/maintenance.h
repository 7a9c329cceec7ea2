#pragma once
// A Worker's optional in-process maintenance (WorkerOptions::maintenance, off by default: batond
// does the same for every namespace): for the worker's own types it promotes due delayed and
// retrying tasks (baton_v2_promote) and reclaims tasks whose lease ended (baton_v2_reclaim, which
// only ever takes a task past its own lease deadline, whoever calls it).
// Cheap at rest: one thread and one connection; it sleeps until the earliest due time or lease
// deadline the functions report (next_due_ms / next_deadline_ms against their now_ms), at most
// kMaxSleep, and wakes early when this worker schedules an earlier retry. It never polls faster.
#include <chrono>
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
#include "core/loop_log.h"
#include "worker/alarm.h"

namespace baton::internal {

class Maintenance {
 public:
  using Clock = std::chrono::steady_clock;
  // The longest sleep: also how late a delayed task enqueued by someone else (which rings no
  // alarm here) or a lease taken by another worker may be seen.
  static constexpr std::chrono::milliseconds kMaxSleep{1000};

  struct Target {
    std::string ns;
    std::string type;
    RetryPolicy retry;  // for the tasks it reclaims
  };

  // `reaper` is the name the reclaim events carry (the worker's consumer name).
  Maintenance(RedisEndpoint endpoint, std::vector<Target> targets, std::string reaper, LogFn log);
  ~Maintenance();  // Stop()s
  Maintenance(const Maintenance&) = delete;
  Maintenance& operator=(const Maintenance&) = delete;

  // Connects (kUnavailable on failure) and starts the thread; its first pass runs at once.
  Status Start();
  void Stop();  // idempotent

  // Target `target` has a retry due at `due_ms` (Unix ms, Redis' clock), as baton_v2_fail said:
  // promote it then, if that is earlier than planned. Thread-safe.
  void OnRetryScheduled(std::size_t target, std::int64_t due_ms);

 private:
  struct Plan {
    Clock::time_point promote_at;
    Clock::time_point reclaim_at;
  };
  void Loop();
  // One round trip with the calls that are due; updates plans_. False on an I/O failure.
  bool Pass(Clock::time_point now, std::chrono::milliseconds retry_in);
  // Local time of a server time `at_ms`, given the server's `now_ms` read at local `now`, at most
  // now + kMaxSleep (-1, "nothing due", is that too) and, unless the call `progressed`, at least a
  // few ms from now.
  static Clock::time_point LocalDue(std::int64_t at_ms, std::int64_t now_ms, bool progressed,
                                    Clock::time_point now);

  RedisEndpoint endpoint_;
  std::vector<Target> targets_;
  std::string reaper_;
  LogFn log_;
  OutageLog outage_{"worker maintenance"};  // loop thread only
  std::unique_ptr<RedisConnection> conn_;
  std::mt19937_64 rng_;
  Alarm alarm_;
  std::thread thread_;

  std::mutex mu_;  // guards plans_, server_offset_ms_
  std::vector<Plan> plans_;
  bool have_offset_ = false;
  std::int64_t server_offset_ms_ = 0;  // server Unix ms - local steady ms
};

}  // namespace baton::internal
