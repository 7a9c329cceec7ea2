#pragma once
// The worker runtime: register handlers by (namespace, task_type), then Run(). Each task type has
// its own fetcher and its own concurrency budget, so a slow or backlogged type never delays another.
// At-least-once: a task is acked only after its handler returned OK.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

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
  // past its grace period, or the lease was lost. Long handlers check it and return early.
  bool cancelled() const { return cancel_->load(std::memory_order_relaxed); }
  // The attempt's deadline (steady clock); time_point::max() without execution_timeout.
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }

  TaskContext(const Task* task, int attempt, std::string stream_id,
              const std::atomic<bool>* cancel, std::chrono::steady_clock::time_point deadline)
      : task_(task), attempt_(attempt), stream_id_(std::move(stream_id)), cancel_(cancel),
        deadline_(deadline) {}

 private:
  const Task* task_;
  int attempt_;
  std::string stream_id_;
  const std::atomic<bool>* cancel_;
  std::chrono::steady_clock::time_point deadline_;
};

// Throw from a handler (or return a Status with kInvalidArgument via NonRetryable()) to send the
// task straight to the dead-letter queue without retries.
class NonRetryableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A handler returns OK for success. A non-OK Status, or any exception, is a failed attempt whose
// message (and, for exceptions, a stack trace) is recorded. Use NonRetryable() to skip retries.
using Handler = std::function<Status(TaskContext&)>;
Status NonRetryable(std::string message);  // a Status the worker treats as non-retryable

struct TypeOptions {
  int concurrency = 0;  // handler threads for this type; 0 = WorkerOptions::default_concurrency
  RetryPolicy retry;
};

struct WorkerOptions {
  std::string redis_url = "redis://127.0.0.1:6379";
  // Consumer group. Every worker of one service shares it; a different service that wants its own
  // copy of every task uses its own group. Consumer names are "<service>:<host>:<pid>:<random>".
  std::string group = "baton";
  std::string service = "worker";
  int default_concurrency = 4;
  int fetch_batch = 64;                         // entries per dequeue call
  std::chrono::milliseconds block{2000};        // XREAD BLOCK when idle
  std::chrono::milliseconds lease{15000};       // a task idle this long in the PEL is taken back
  std::chrono::milliseconds shutdown_grace{10000};
  std::chrono::seconds done_retention{86400};
  std::size_t events_maxlen = 100000;
  // Run the promoter (delayed/retry -> stream) and the lease reaper inside this worker. batond does
  // the same job standalone; both may run at once safely.
  bool maintenance = true;
  std::chrono::milliseconds maintenance_interval{100};
  bool handle_signals = false;  // Run() stops on SIGTERM/SIGINT
};

// Counters since Start().
struct WorkerStats {
  std::uint64_t succeeded = 0;
  std::uint64_t failed = 0;     // attempts that failed (retry or dead)
  std::uint64_t dead = 0;       // of those, went to the dead-letter queue
  std::uint64_t malformed = 0;  // entries that were not valid tasks
};

// Thread-safety: Register before Start/Run; Stop() and stats() from any thread.
class Worker {
 public:
  explicit Worker(WorkerOptions options);
  ~Worker();  // Stop()s
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  Status Register(const std::string& ns, const std::string& task_type, Handler handler,
                  TypeOptions options = {});
  // Connects, checks the functions library version, starts the fetchers; returns at once.
  Status Start();
  // Start() and block until Stop() (or a signal when handle_signals).
  Status Run();
  // Graceful: stop fetching, let in-flight tasks finish within shutdown_grace, ack them, return.
  // Tasks still running after the grace are left to the lease (another worker takes them over).
  void Stop();
  WorkerStats stats() const;
  const std::string& consumer_name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
