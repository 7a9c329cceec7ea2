#pragma once
// The producer side: enqueue tasks (now, delayed, at a time, idempotent), cancel them.
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "baton/redis_options.h"
#include "baton/status.h"
#include "baton/task.h"

namespace baton {

struct ClientOptions {
  RedisOptions redis;
  // Durable enqueue on a replicated Redis (a cluster, or a primary with replicas): when > 0,
  // every enqueue is followed by WAIT wait_replicas wait_timeout on the same primary, and succeeds
  // only once that many replicas have the task, so a kill -9 of the primary and a failover cannot
  // lose it. Fewer in time: kUnavailable ("... acknowledged by only K of N replicas"); the task
  // was written on the primary and may still run, but is not known to be durable.
  int wait_replicas = 0;
  std::chrono::milliseconds wait_timeout{1000};
};

// The settings of one namespace, kept in Redis (baton_v2_configure) so that every client, worker
// and daemon of every language applies the same ones. Defaults: contract/protocol.json.
struct NamespaceSettings {
  std::int64_t events_maxlen = 0;     // events entries kept; 0 = no events
  std::int64_t done_retention_s = 0;  // a finished id stays a duplicate for enqueue this long
  std::int64_t dlq_max = 0;           // dead tasks kept per task type (oldest dropped beyond)
  std::int64_t dlq_retention_s = 0;   // dead tasks older than this are dropped
  std::int64_t lease_ms = 0;          // lease of a task whose worker asks for none
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
  // key is refused (EnqueueOutcome::kUniqueConflict). unique_ttl must be >= 1 s when the key is
  // set.
  std::string unique_key;
  std::chrono::seconds unique_ttl{0};
  nlohmann::json extra = nlohmann::json::object();  // trace, headers, custom top-level fields
};

// One task to enqueue.
struct TaskRequest {
  std::string ns;
  std::string task_type;
  nlohmann::json payload = nlohmann::json::object();  // must be an object
  // The payload as exact text (a JSON object, e.g. from another system): when set it is sent byte
  // for byte and `payload` is not used. nlohmann::json would re-serialize a parsed payload (1.10
  // becomes 1.1, integers beyond 2^64 are rounded), so pass the text to keep such values.
  std::optional<std::string> payload_json;
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
  std::string stream_id;    // kQueued
  std::int64_t due_ms = 0;  // kScheduled: due time, Unix ms (Redis clock)
  std::string detail;       // kDuplicate: current state; kUniqueConflict: the holder's id
};

// Thread-safety: a Client is NOT thread-safe (it owns one connection); make one per thread.
// Errors carry the operation as a prefix: "enqueue: max_retry: must be an integer 0..25 (got 99)".
// A broken connection fails the call in progress with kUnavailable; the next call reconnects (and
// checks the functions library version again).
class Client {
 public:
  // Connects to options.redis_url and checks the functions library version. Fails with
  // kInvalidArgument (bad URL, "redis_url: ..."), kUnavailable (cannot connect or authenticate) or
  // kVersionMismatch ("functions library version X loaded in Redis, this client needs 1: run
  // 'baton init'").
  static StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  ~Client();

  // Validates and enqueues one task. Invalid input: kInvalidArgument naming the field; nothing is
  // written. A duplicate id is not an error: see EnqueueResult::outcome.
  StatusOr<EnqueueResult> Enqueue(const TaskRequest& request);
  // Enqueues many, pipelined and batched per (namespace, type); results in request order. All
  // requests are validated first: one invalid request fails the call ("enqueue: requests[3]:
  // max_retry: ...") and nothing is written. All baton_enqueue calls (at most 256 tasks each) go
  // in one round trip; if one of them fails (kUnavailable, or an error reply from Redis) the call
  // fails although other calls may have been written: retry with the same task ids, which is safe
  // (already written ones come back as kDuplicate).
  StatusOr<std::vector<EnqueueResult>> EnqueueMany(std::span<const TaskRequest> requests);
  // Enqueues a fully formed task document (already validated or from another language), exactly
  // as it is (payload bytes, created_at, extra). The document carries its id, retries, delay,
  // timeout and extra fields, so `scheduling` may only set run_at, unique_key and unique_ttl: any
  // other field set there is refused (kInvalidArgument "scheduling.max_retry: ..."), not ignored.
  // Invalid task: kInvalidArgument, nothing written.
  StatusOr<EnqueueResult> EnqueueTask(const Task& task, const EnqueueOptions& scheduling = {});

  // Cancels a queued or scheduled/retrying task (its type is read from the task record; in a
  // partitioned namespace, the id's partition is searched first, then the others).
  // kNotFound if there is no such live task, kConflict if it is running or dead, kInvalidArgument
  // for a malformed namespace or id. The final state "cancelled" is kept for the namespace's
  // done_retention_s.
  Status Cancel(const std::string& ns, const std::string& task_id);

  // Changes settings of a namespace, in every partition of it (name -> value as text, "" = back
  // to the default; names as in NamespaceSettings) and returns the effective settings. No
  // changes: read only.
  // kInvalidArgument names the setting and its range; nothing is written then.
  StatusOr<NamespaceSettings> ConfigureNamespace(
      const std::string& ns, const std::vector<std::pair<std::string, std::string>>& changes = {});

  // Partitions (docs/cluster.md): a namespace spread over several Redis Cluster slots. Enqueue
  // sends each task to partition fnv1a32(task_id) mod P of its namespace (the count is re-read
  // every 5 s); Cancel and ConfigureNamespace cover every partition.
  // The namespace's partition count P (1 when never partitioned).
  StatusOr<int> Partitions(const std::string& ns);
  // Raises the count to `count` (1..1024), copying the namespace's settings to the new
  // partitions, and returns the count in effect. It never shrinks: a lower count is
  // kInvalidArgument ("count: must not be below the current 4 ..."); kVersionMismatch when the
  // functions library in Redis predates partitions.
  StatusOr<int> SetPartitions(const std::string& ns, int count);

  // Builds the Task a request would enqueue (task_id: options.task_id or a new UUIDv7;
  // created_at: now), validated. Does not touch Redis; thread-safe.
  static StatusOr<Task> BuildTask(const TaskRequest& request);

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton
