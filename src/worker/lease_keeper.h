#pragma once
// Keeps the leases of a Worker's running attempts and enforces execution_timeout:
// - heartbeat thread: every lease/3, one pipelined round trip with a baton_extend per type for the
//   SIDs in flight; a SID missing from the answer lost its lease, so its attempt is cancelled.
// - watchdog thread: every 25 ms, cancels the attempts past their deadline and stops
//   heartbeating them (a handler that ignores cancellation then loses its lease to the reaper).
// Two threads so that a slow or broken Redis connection never delays the deadlines.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "baton/status.h"
#include "broker/redis_connection.h"
#include "worker/type_runner.h"

namespace baton::internal {

class LeaseKeeper {
 public:
  LeaseKeeper(RedisEndpoint endpoint, std::chrono::milliseconds lease,
              std::vector<std::shared_ptr<TypeRunner>> runners);
  ~LeaseKeeper();  // Stop()s
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // Connects (kUnavailable on failure) and starts both threads.
  Status Start();
  void Stop();  // idempotent

  // One heartbeat round now (what the heartbeat thread does every lease/3). Heartbeat thread only.
  Status HeartbeatOnce();

 private:
  void HeartbeatLoop();
  void WatchdogLoop();
  bool WaitFor(std::chrono::milliseconds d);  // false when stopping

  RedisEndpoint endpoint_;
  std::chrono::milliseconds lease_;
  std::vector<std::shared_ptr<TypeRunner>> runners_;
  std::unique_ptr<RedisConnection> conn_;
  std::thread heartbeat_;
  std::thread watchdog_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

}  // namespace baton::internal
