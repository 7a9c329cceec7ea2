#pragma once
// The worker runtime: register handlers by (namespace, task_type), then Run(). Each task type has
// its own fetcher thread, Redis connection and pool of handler threads, so a slow or backlogged
// type never delays another. A fetcher only takes as many tasks as it has idle handler threads.
// At-least-once: a task is acked only after its handler returned OK. Every task a worker takes is
// leased to it in Redis for the type's lease (TypeOptions::lease_ms) and the worker extends the
// lease while the handler runs; a worker that dies or hangs stops extending, and once the lease
// ends whoever reclaims (batond, or a worker with maintenance on) hands the task to another worker
// (as a failed attempt). Nobody takes a task whose lease is still running.
// Partitions (docs/cluster.md): in a namespace spread over P partitions, each partition of a
// registered type gets its own fetcher, connection and pool (TypeOptions::concurrency each), and
// handlers see Task::ns as the namespace itself. The worker re-reads P every 5 s (one HMGET) and
// serves new partitions without a restart.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "baton/logger.h"
#include "baton/redis_options.h"
#include "baton/status.h"
#include "baton/task.h"

namespace baton {

// Retry backoff: delay after the n-th failure = min(base * 2^(n-1), max) plus up to 25% jitter.
struct RetryPolicy {
  std::chrono::milliseconds base{2000};
  std::chrono::milliseconds max{600000};
};

// What a handler sees. Thread-safety: owned by the thread running the handler; cancelled() may be
// read at any time.
class TaskContext {
 public:
  const Task& task() const { return *task_; }
  // 1 on the first run, 2 on the first retry, ...
  int attempt() const { return attempt_; }
  const std::string& stream_id() const { return stream_id_; }
  // True once the attempt should stop: its execution_timeout passed, the worker is shutting down
  // past its grace period, or the lease was lost (another worker may run the task now). Long
  // handlers check it and return early; what they return then no longer matters much: past the
  // deadline the attempt is a timeout, after the grace it is left to the lease.
  bool cancelled() const { return cancel_->load(std::memory_order_relaxed); }
  // The attempt's deadline (steady clock); time_point::max() without execution_timeout.
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }

  TaskContext(const Task* task, int attempt, std::string stream_id, const std::atomic<bool>* cancel,
              std::chrono::steady_clock::time_point deadline)
      : task_(task),
        attempt_(attempt),
        stream_id_(std::move(stream_id)),
        cancel_(cancel),
        deadline_(deadline) {}

 private:
  const Task* task_;
  int attempt_;
  std::string stream_id_;
  const std::atomic<bool>* cancel_;
  std::chrono::steady_clock::time_point deadline_;
};

// Throw from a handler (or return NonRetryable(...)) to send the task straight to the dead-letter
// queue without retries (failure kind "non_retryable"). Only this choice skips the retries: any
// other failure, kInvalidArgument included, retries with backoff.
class NonRetryableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A handler returns OK for success. A non-OK Status, or any exception, is a failed attempt: it is
// recorded in baton:v2:{ns}:errors with a message (Status::ToString(), or "<exception type>:
// what()") and a stack trace (for an exception, where it was thrown; for a Status, where the
// handler made it; file:line where the binary has debug info), and the task retries with backoff
// until it has run 1 + max_retry times. An attempt that returns after its execution_timeout fails
// as "timeout" whatever it returned. Handlers run concurrently on several threads
// (TypeOptions::concurrency): make them thread-safe.
using Handler = std::function<Status(TaskContext&)>;
// A Status (code kNonRetryable, `message`): the task goes to the dead-letter queue at once.
Status NonRetryable(std::string message);

struct TypeOptions {
  // Handler threads for this type, i.e. the most tasks of this type this worker holds at once;
  // 0 = WorkerOptions::default_concurrency. Throughput with very short handlers grows with it
  // (each round trip to Redis acks and fetches up to this many tasks).
  int concurrency = 0;
  RetryPolicy retry;  // also used by this worker's maintenance (if on) for tasks of this type
  // Lease of every task of this type this worker takes, in ms (1000..86400000): the worker extends
  // it every lease_ms/3 while the handler runs; once it ends without an extension (the worker
  // crashed, hung past execution_timeout or lost Redis) the task may be reclaimed. 0 = the
  // namespace's lease_ms setting (baton_v2_configure, default 30000), read once by Start(). Make
  // it a few times longer than the longest stall a healthy worker may see (a slow network, a
  // Redis failover): a shorter lease only makes a dead worker's tasks come back sooner.
  std::int64_t lease_ms = 0;
};

struct WorkerOptions {
  // Commands wait up to redis.timeout; the fetcher's blocking read adds `block` to it.
  RedisOptions redis;
  // Consumer group. Every worker of a (namespace, type) shares one group: a task is one unit of
  // work, acked once (ack deletes the entry), not a message fanned out to several services. The
  // only other group is the temporary "<group>.rescue" of `baton rescue` (docs/rescue.md).
  // Consumer names are "<service>:<host>:<pid>:<random>:cpp", unique per process.
  std::string group = "baton";
  std::string service = "worker";
  int default_concurrency = 4;
  int fetch_batch = 64;  // most entries per read (1..1000)
  // How long the fetcher's read (XREADGROUP BLOCK) waits when the stream is empty and nothing is in
  // flight: an idle fetcher costs Redis one command per `block`. While tasks are in flight it
  // blocks at most 100 ms at a time, so that their acks are sent promptly.
  std::chrono::milliseconds block{5000};
  std::chrono::milliseconds shutdown_grace{10000};
  // Also promote due delayed/retrying tasks and reclaim expired leases of this worker's types,
  // inside this process. Off by default: batond does it for every namespace. Turn it on when no
  // batond runs (tests, a single-process setup): without either, retries and delayed tasks stay
  // scheduled and a dead worker's tasks stay leased to it. It sleeps until the next due time or
  // lease deadline Redis reports (at most 1 s at a time); it never polls faster. Several
  // maintenance loops and batond may run at once safely.
  bool maintenance = false;
  // Run() stops gracefully on SIGTERM/SIGINT: it installs handlers for them (restored when Run()
  // returns). The worker's own threads always block both signals; call Run() from the main thread
  // (or block the signals in the application's other threads) so that they reach Run().
  bool handle_signals = false;
  // Receives what happens in the worker's own threads: a lost or recovered Redis connection, a
  // failed heartbeat or ack, maintenance trouble (outages once when they start, once when they
  // end). nullptr: nothing is logged. NewStderrLogger() writes them to stderr.
  std::shared_ptr<Logger> logger;
};

// Counters since Start(), counted when Redis confirmed the outcome.
struct WorkerStats {
  std::uint64_t succeeded = 0;  // acks recorded (done, or stale_done after a lost lease)
  std::uint64_t failed = 0;     // failures recorded (went to retry or dead), malformed included
  std::uint64_t dead = 0;       // of those, went to the dead-letter queue
  // Entries this worker read but could not decode (a missing field, a payload that is not a JSON
  // object, ...): each went to the dead-letter queue as malformed, none ran.
  std::uint64_t malformed = 0;
};

// Thread-safety: Register before Start/Run; Stop() and stats() from any thread.
// Consumer name: "<service>:<hostname>:<pid>:<6 random hex>:cpp", fixed at construction.
class Worker {
 public:
  explicit Worker(WorkerOptions options);
  ~Worker();  // Stop()s
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Errors: kInvalidArgument (bad name, empty handler, concurrency < 0, retry base < 1 ms or
  // max < base, lease_ms neither 0 nor 1000..86400000), kAlreadyExists (this (ns, type) is
  // registered), kConflict (already started).
  Status Register(const std::string& ns, const std::string& task_type, Handler handler,
                  TypeOptions options = {});
  // Connects, checks the functions library version, adds the namespaces to baton:v2:namespaces
  // (once per process and Redis; a convenience, batond finds work without it), reads the
  // namespace's lease_ms for the types that use it, starts the fetchers, the lease keeper and,
  // with maintenance, the maintenance loop; returns at once. Errors: kVersionMismatch (the
  // message says to run `baton init`), kUnavailable, kInvalidArgument (options, or no handler
  // registered), kConflict (called twice). Once started, threads reconnect by themselves
  // (backoff 100 ms doubling to 5 s) and keep unsent acks until they are sent.
  Status Start();
  // Start() and block until Stop() (or a signal when handle_signals), then stop gracefully.
  // Returns at once if Stop() was already called.
  Status Run();
  // Graceful: stop fetching, let in-flight tasks finish within shutdown_grace, ack them, return.
  // Tasks still running after the grace are cancelled and left to the lease (another worker takes
  // them over); a handler that ignores cancellation keeps its (detached) thread until it returns.
  // Idempotent.
  void Stop();
  WorkerStats stats() const;
  const std::string& consumer_name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
