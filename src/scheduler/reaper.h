#pragma once
// The lease reaper: takes back tasks whose lease ended (their worker crashed, hung or lost Redis
// and stopped heartbeating) with FCALL baton_v2_reclaim. The lease lives in Redis (a task's
// delivery time in its consumer group, renewed by each heartbeat, plus the lease length its
// consumer stored in baton:v2:{NS}:leases:TYPE), so the reaper has no lease setting of its own and
// can never take a task from a live worker. Each reclaimed task counts as a failed attempt of kind
// lease_expired and follows the retry policy.
// A check of a type is a plain read: its consumer groups' pending counts (XINFO GROUPS, pipelined
// for all due types). A type with nothing pending is checked again after `interval`;
// only a type with pending tasks costs a baton_v2_reclaim call, which returns the type's next lease
// end, so the reaper checks it again then (or after `interval`, whichever comes first: with 1 s it
// sees every new lease before it ends, a lease lasting >= 1 s), and expired leases are taken back
// when they end. An idle reaper costs one command per type per interval, in one round trip. Run by
// batond (a Worker's maintenance has its own loop); several reapers may run at once (the function
// is atomic).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "baton/redis_options.h"
#include "baton/status.h"
#include "baton/worker.h"
#include "broker/functions.h"
#include "broker/redis_connection.h"
#include "core/loop_log.h"
#include "scheduler/type_ref.h"

namespace baton::internal {

struct ReapResult {
  std::int64_t reclaimed = 0;
  std::int64_t retried = 0;
  std::int64_t dead = 0;
  std::int64_t next_deadline_ms = -1;  // earliest lease end left (server ms), -1 = none pending
  std::int64_t now_ms = 0;             // the server's time of the last call
};

class Reaper {
 public:
  // One served type with the retry policy its reclaimed tasks follow.
  struct Target {
    TypeRef type;
    RetryPolicy retry;
  };
  struct Options {
    RedisOptions redis;  // url, timeout
    int count = 500;     // expired leases per baton_v2_reclaim call (1..1000)
    // Longest time between two checks of a type.
    std::chrono::milliseconds interval{1000};
    // A type with consumers but nothing pending is still reclaimed this often, so that
    // baton_v2_reclaim deletes the consumers of workers that are gone (docs/protocol.md, reclaim).
    std::chrono::milliseconds prune_every{std::chrono::minutes(5)};
    std::string name = "reaper";  // recorded in the events as the worker of the transition
    // The types to serve: these targets, or (when empty) the types `types_source` returns, asked
    // before every pass, with default_retry. Both empty: nothing to do.
    std::vector<Target> targets;
    std::function<std::vector<TypeRef>()> types_source;
    RetryPolicy default_retry;
    LogFn log;  // empty: nothing is logged (batond passes its structured logger)
    // Called on the loop thread for every type of which a pass took tasks back. May be empty.
    std::function<void(const TypeRef&, const ReapResult&)> on_reclaimed;
  };

  explicit Reaper(Options options);
  ~Reaper();  // Stop()s
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  // Connects and starts the loop thread. kInvalidArgument (bad URL) or kUnavailable; once
  // started, the loop reconnects by itself.
  Status Start();
  void Stop();  // idempotent

  // Takes back every expired lease of one type now (calling baton_v2_reclaim until no expired
  // lease is left). Thread-safe.
  StatusOr<ReapResult> RunOnce(const std::string& ns, const std::string& type,
                               const RetryPolicy& retry);
  StatusOr<ReapResult> RunOnce(const std::string& ns, const std::string& type);  // default_retry
  // One pass over all served types: the sums, and the earliest next deadline.
  StatusOr<ReapResult> RunPass();

 private:
  std::vector<Target> CurrentTargets() const;  // sorted by type
  // Reclaims the given targets (one pipelined round trip, more calls only for a type with more
  // expired leases than `count`); results in the same order.
  StatusOr<std::vector<ReapResult>> ReclaimTargets(const std::vector<Target>& targets);
  fn::Command ReclaimCommand(const Target& target);  // mu_ held (rng_)
  // Of each target's stream, summed over its consumer groups (0: no stream or no group): the
  // pending entries and the consumers. One round trip that writes nothing (XINFO GROUPS per type).
  struct GroupCounts {
    std::int64_t pending = 0;
    std::int64_t consumers = 0;
  };
  StatusOr<std::vector<GroupCounts>> CountGroups(const std::vector<Target>& targets);
  // How long until a type whose earliest lease end is `deadline_ms` (-1: none) must be checked.
  std::chrono::milliseconds UntilNextCheck(std::int64_t deadline_ms, std::int64_t now_ms) const;
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
