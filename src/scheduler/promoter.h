#pragma once
// The delayed-task promoter: moves due tasks of the scheduled sets (delayed first runs and retries
// waiting out their backoff) into their work streams with FCALL baton_v2_promote. It does not
// poll: it keeps the next due time of every served type (each call returns it) and sleeps until
// the earliest one, woken early by the messages "NS|TYPE|due_ms" the functions publish on
// baton:v2:wakeup when a task becomes the earliest of its set. Only the types that are due are
// called. Every `interval` it checks every type anyway, as a safety net. Run by batond (a Worker's
// maintenance has its own loop, src/worker/maintenance.h). Any number of promoters may run at
// once: the function is atomic, so nothing is promoted twice.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "baton/redis_options.h"
#include "baton/status.h"
#include "broker/redis_connection.h"
#include "core/loop_log.h"
#include "scheduler/type_ref.h"
#include "scheduler/wakeup_subscriber.h"

namespace baton::internal {

struct PromoteResult {
  std::int64_t promoted = 0;
  std::int64_t next_due_ms = -1;  // earliest due time left (Unix ms, server clock), -1 = none
  std::int64_t now_ms = 0;        // the server's time when the last call ran
};

class Promoter {
 public:
  struct Options {
    RedisOptions redis;  // url, timeout
    int limit = 500;     // tasks per baton_v2_promote call (1..10000)
    // Longest sleep: every `interval` every served type is checked, due time known or not.
    std::chrono::milliseconds interval{30000};
    // The types to serve: this fixed list, or (when it is empty) the list `types_source` returns,
    // asked before every pass (call Poke() when it grew). Both empty: nothing to do.
    std::vector<TypeRef> types;
    std::function<std::vector<TypeRef>()> types_source;
    // Subscribe to baton:v2:wakeup itself. false: the owner forwards the messages to Notify() and
    // calls Resync() after its subscription was lost (batond shares one subscription).
    bool subscribe = true;
    LogFn log;  // empty: nothing is logged (batond passes its structured logger)
  };

  explicit Promoter(Options options);
  ~Promoter();  // Stop()s
  Promoter(const Promoter&) = delete;
  Promoter& operator=(const Promoter&) = delete;

  // Connects and starts the loop thread (and the wake-up subscriber). Fails with kInvalidArgument
  // (bad URL) or kUnavailable (Redis unreachable); once started, the loop reconnects by itself.
  Status Start();
  // Stops the loop and waits for it. Idempotent.
  void Stop();

  // A wake-up message: the loop calls the type once its due time comes (at once when due).
  void Notify(const WakeupMessage& msg);
  // The types source changed: the loop re-reads it now and checks the new types.
  void Poke();
  // Forgets every known due time and checks every type now (messages may have been missed).
  void Resync();

  // Promotes every due task of one type now, calling baton_v2_promote until a call promotes
  // fewer than `limit`. Thread-safe (serialised with the loop); connects on first use.
  StatusOr<PromoteResult> RunOnce(const std::string& ns, const std::string& type);
  // One call per served type, due or not (what the loop's safety pass does): `promoted` is the
  // sum, `next_due_ms` the earliest due time over all types.
  StatusOr<PromoteResult> RunPass();

  // Tasks promoted by this object since construction.
  std::uint64_t promoted_total() const { return promoted_total_.load(); }

 private:
  std::vector<TypeRef> CurrentTypes() const;
  // Promotes the given types (one pipelined round trip, more calls only for a type that filled
  // its limit); results in the same order.
  StatusOr<std::vector<PromoteResult>> PromoteTypes(const std::vector<TypeRef>& types);
  StatusOr<PromoteResult> RunOnceLocked(const TypeRef& type);  // mu_ held
  // The Redis server's clock now, estimated from the last reply (wake_mu_ held).
  std::int64_t ServerNowLocked() const;
  void Loop();

  Options options_;
  std::unique_ptr<WakeupSubscriber> subscriber_;
  std::thread thread_;
  std::atomic<std::uint64_t> promoted_total_{0};

  std::mutex mu_;  // guards conn_ (one command at a time)
  std::unique_ptr<RedisConnection> conn_;

  std::mutex wake_mu_;  // guards the fields below
  std::condition_variable wake_cv_;
  bool stopping_ = false;
  bool woken_ = false;
  bool resync_ = false;
  // What the loop knows of each type: its next due time (server ms; -1 = nothing scheduled). A
  // type missing here is unknown and checked on the next pass.
  std::map<TypeRef, std::int64_t> next_due_;
  std::map<TypeRef, std::int64_t> hints_;  // wake-up messages not merged into next_due_ yet
  std::int64_t clock_offset_ms_ = 0;       // server ms - local steady ms, at the last reply
  bool clock_known_ = false;               // clock_offset_ms_ was measured
  // The server time the loop plans to wake at; a wake-up message with an earlier due time wakes it.
  std::int64_t planned_wake_ms_ = 0;
};

}  // namespace baton::internal
