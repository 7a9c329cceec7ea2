#pragma once
// The producer side: enqueue tasks (now, delayed, at a time, idempotent), cancel them.
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "baton/status.h"
#include "baton/task.h"

namespace baton {

struct ClientOptions {
  std::string redis_url = "redis://127.0.0.1:6379";
  std::chrono::milliseconds timeout{5000};
  std::size_t events_maxlen = 100000;  // cap of each namespace's events stream; 0 = no events
  std::chrono::seconds done_retention{86400};  // how long done markers / final records live
};

struct EnqueueOptions {
  std::optional<std::string> task_id;  // default: a new UUIDv7
  int max_retry = kDefaultMaxRetry;
  std::int64_t delay_seconds = 0;
  // Absolute first-run time; overrides delay_seconds for scheduling (delay_seconds is still
  // recorded in the task as given).
  std::optional<std::chrono::system_clock::time_point> run_at;
  std::optional<int> execution_timeout;  // seconds
  // Unique key: while a task holding this key is within `unique_ttl`, another enqueue with the same
  // key is refused (EnqueueOutcome::kUniqueConflict).
  std::string unique_key;
  std::chrono::seconds unique_ttl{0};
  nlohmann::json extra = nlohmann::json::object();  // trace, headers, custom top-level fields
};

// One task to enqueue.
struct TaskRequest {
  std::string ns;
  std::string task_type;
  nlohmann::json payload = nlohmann::json::object();  // must be an object
  EnqueueOptions options;
};

enum class EnqueueOutcome {
  kQueued,          // in the work stream now
  kScheduled,       // delayed: waits in the scheduled set
  kDuplicate,       // this task id is live, or finished within the retention: nothing written
  kUniqueConflict,  // another live task holds the unique key
};

struct EnqueueResult {
  std::string task_id;
  EnqueueOutcome outcome = EnqueueOutcome::kQueued;
  std::string stream_id;       // kQueued
  std::int64_t due_ms = 0;     // kScheduled: due time, Unix ms (Redis clock)
  std::string detail;          // kDuplicate: current state; kUniqueConflict: the holder's id
};

// Thread-safety: a Client is NOT thread-safe (it owns one connection); make one per thread.
class Client {
 public:
  // Connects and checks the functions library version. Fails with kVersionMismatch (message says
  // to run `baton init`) or kUnavailable.
  static StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  ~Client();

  // Validates and enqueues one task. Invalid input: kInvalidArgument naming the field; nothing is
  // written. A duplicate id is not an error: see EnqueueResult::outcome.
  StatusOr<EnqueueResult> Enqueue(const TaskRequest& request);
  // Enqueues many, pipelined and batched per (namespace, type); results in request order. All
  // requests are validated first: one invalid request fails the call and nothing is written.
  StatusOr<std::vector<EnqueueResult>> EnqueueMany(std::span<const TaskRequest> requests);
  // Enqueues a fully formed task document (already validated or from another language).
  StatusOr<EnqueueResult> EnqueueTask(const Task& task, const EnqueueOptions& scheduling = {});

  // Cancels a queued or scheduled task (its type is read from the task record). kNotFound if there
  // is no such live task, kConflict if it is running or dead.
  Status Cancel(const std::string& ns, const std::string& task_id);

  // Builds the Task a request would enqueue (id, created_at filled in), validated.
  static StatusOr<Task> BuildTask(const TaskRequest& request);

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
