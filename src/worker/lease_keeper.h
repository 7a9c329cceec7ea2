#pragma once
// Keeps the leases of a Worker's running attempts and enforces execution_timeout:
// - heartbeat thread: every lease/3 of each type (its TypeOptions::lease_ms), one pipelined round
//   trip with a baton_v2_extend per due type for the tasks in flight; a SID missing from the
//   answer lost its lease, so its attempt is cancelled. Nothing in flight: no command at all.
// - watchdog thread: sleeps until the earliest attempt deadline (woken when an attempt gets one),
//   cancels the attempts past it and stops heartbeating them (a handler that ignores cancellation
//   then loses its lease, and the task is reclaimed for another worker).
// Two threads so that a slow or broken Redis connection never delays the deadlines.
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "baton/status.h"
#include "broker/redis_connection.h"
#include "core/loop_log.h"
#include "worker/alarm.h"
#include "worker/type_runner.h"

namespace baton::internal {

class LeaseKeeper {
 public:
  // `deadline_alarm` is the one the runners ring when an attempt gets a deadline.
  LeaseKeeper(RedisEndpoint endpoint, std::vector<std::shared_ptr<TypeRunner>> runners,
              std::shared_ptr<Alarm> deadline_alarm, LogFn log);
  ~LeaseKeeper();  // Stop()s
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // Connects (kUnavailable on failure) and starts both threads.
  Status Start();
  void Stop();  // idempotent

 private:
  using Clock = std::chrono::steady_clock;
  // Extends the leases of the runners whose beat is due (`due[i]`). Heartbeat thread only.
  Status Beat(const std::vector<bool>& due);
  void HeartbeatLoop();
  void WatchdogLoop();

  RedisEndpoint endpoint_;
  std::vector<std::shared_ptr<TypeRunner>> runners_;
  LogFn log_;
  OutageLog outage_{"worker heartbeat"};  // heartbeat thread only
  std::unique_ptr<RedisConnection> conn_;
  Alarm heartbeat_alarm_;  // only rung by Stop()
  std::shared_ptr<Alarm> deadline_alarm_;
  std::thread heartbeat_;
  std::thread watchdog_;
};

}  // namespace baton::internal
