#pragma once
// The delayed-task promoter: moves due tasks of the scheduled sets (delayed first runs and retries
// waiting out their backoff) into their work streams with FCALL baton_promote. It sleeps until the
// earliest due time of all its types (capped at the loop interval) and wakes up early when
// baton_enqueue announces an earlier task on the channel baton:wakeup. Run by batond and, for its
// own types, by a Worker with maintenance on. Any number of promoters may run at once: the
// function is atomic, so nothing is promoted twice.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "baton/status.h"
#include "broker/redis_connection.h"
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
    std::string redis_url = "redis://127.0.0.1:6379";
    std::size_t events_maxlen = 100000;
    int limit = 500;  // tasks per baton_promote call
    // Longest sleep between two passes (also the bound on missed wake-up messages).
    std::chrono::milliseconds interval{1000};
    // The (ns, type) pairs to serve; empty = every type of every namespace, rediscovered each pass.
    std::vector<TypeRef> types;
  };

  explicit Promoter(Options options);
  ~Promoter();  // Stop()s
  Promoter(const Promoter&) = delete;
  Promoter& operator=(const Promoter&) = delete;

  // Connects and starts the loop thread and the wake-up subscriber. Fails with kInvalidArgument
  // (bad URL) or kUnavailable (Redis unreachable); once started, the loop reconnects by itself.
  Status Start();
  // Stops the loop and waits for it. Idempotent.
  void Stop();

  // Promotes every due task of one type now, calling baton_promote until a call promotes fewer
  // than `limit`. Thread-safe (serialised with the loop); connects on first use.
  StatusOr<PromoteResult> RunOnce(const std::string& ns, const std::string& type);
  // One pass over all served types (what the loop does on each wake-up): `promoted` is the sum,
  // `next_due_ms` the earliest due time over all types.
  StatusOr<PromoteResult> RunPass();

  // Tasks promoted by this object since construction.
  std::uint64_t promoted_total() const;

 private:
  Status EnsureConnected();  // mu_ held
  StatusOr<PromoteResult> RunOnceLocked(const std::string& ns, const std::string& type);
  void Loop();
  void OnWakeup(const WakeupMessage& msg);

  Options options_;
  std::unique_ptr<WakeupSubscriber> subscriber_;
  std::thread thread_;

  mutable std::mutex mu_;  // guards conn_ (one command at a time) and promoted_total_
  std::unique_ptr<RedisConnection> conn_;
  std::uint64_t promoted_total_ = 0;

  std::mutex wake_mu_;  // guards the fields below
  std::condition_variable wake_cv_;
  bool stopping_ = false;
  bool woken_ = false;
  // The server time the loop plans to wake at; a wake-up message with an earlier due time wakes it.
  std::int64_t planned_wake_ms_ = 0;
};

}  // namespace baton::internal
