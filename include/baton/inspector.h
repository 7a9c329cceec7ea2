#pragma once
// The read side of Baton, for operators: what is in each queue, where a task is and why it has
// not run (the doctor), the dead-letter queue (list, replay, delete, purge) and the
// disaster-recovery consumer group (rescue). The CLI `baton` is built on it; the web console reuses
// it. Every time it reports is on the Redis server's clock (docs/adr/0003-server-clock.md).
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "baton/redis_options.h"
#include "baton/status.h"

namespace baton {

namespace internal {
class InspectorCore;
}  // namespace internal

struct InspectorOptions {
  RedisOptions redis;
  // A consumer that got work or heartbeated within this window is live. Redis 7.0 does not count a
  // read that delivered nothing, so a running worker with nothing to do for longer looks idle (and
  // after 10 namespace leases with nothing pending, baton_v2_reclaim deletes its consumer; its next
  // delivery recreates it): "live" means "busy lately".
  std::chrono::milliseconds live_consumer_window{30000};
  // A scheduled task this late is "overdue": nothing promotes due tasks (batond is not running).
  // Leases have no grace: a lease past its end (delivery or last heartbeat + the consumer's lease
  // length) is expired.
  std::chrono::milliseconds overdue_grace{5000};
  std::size_t event_scan_limit = 20000;       // events read per GetTask and per rate measure
  std::size_t scheduled_scan_limit = 100000;  // records read to split delayed from retrying
  std::size_t entry_scan_limit = 10000;       // stream / PEL entries read by one count
};

// One consumer of a consumer group (XINFO CONSUMERS).
struct ConsumerInfo {
  std::string name;
  std::int64_t pending = 0;  // entries it holds
  std::int64_t idle_ms = 0;  // since it last got entries or heartbeated (claim)
  bool live = false;         // idle_ms < InspectorOptions::live_consumer_window
};

// One consumer group of a work stream.
struct GroupInfo {
  std::string name;
  std::string last_delivered_id;
  std::int64_t pending = 0;         // delivered, not yet acked: in flight
  std::optional<std::int64_t> lag;  // XINFO GROUPS `lag` as Redis reports it (not used: see ready)
  // Entries in the stream after the group's last-delivered-id: what it has yet to deliver. Counted
  // from the stream itself (Redis 7.0's lag is wrong after deletions, e.g. a cancel).
  std::int64_t ready = 0;
  bool ready_exact = true;  // false when the count stopped at entry_scan_limit (then a bound)
  std::vector<ConsumerInfo> consumers;  // by name
  int live_consumers = 0;
};

// Events of one task type over the last minute (counted in the namespace's events stream).
struct QueueRates {
  std::int64_t window_ms = 60000;  // the span the counts cover
  std::int64_t done = 0;           // -> done
  std::int64_t failed = 0;         // -> retry or -> dead
  std::int64_t queued = 0;         // -> queued (enqueued now, promoted, replayed)
  std::int64_t started = 0;        // queued -> active (delivered to a worker)
  std::int64_t dropped = 0;        // dead -> dropped (the dead-letter caps removed them)
  // False when more than InspectorOptions::event_scan_limit events happened in the minute: the
  // counts then cover the newest events only and are scaled up to the minute.
  bool exact = true;
};

// One (namespace, task type). Counts are taken with a handful of commands, not atomically.
struct QueueInfo {
  std::string ns;
  std::string type;
  std::int64_t stream_length = 0;  // live entries in the work stream (acked ones are deleted)
  // Entries waiting for a worker: the largest `ready` of the groups (entries after the group's
  // last-delivered-id), or the stream length when there is no group.
  std::int64_t ready = 0;
  bool ready_exact = true;
  std::int64_t in_flight = 0;  // sum of the groups' pending counts
  // Delivered entries, each leased to the consumer holding it: equal to in_flight (kept for the
  // JSON's "leased").
  std::int64_t leased = 0;
  // Of those, past the end of their lease (pending longer than their consumer's lease length
  // since the delivery or last heartbeat): not yet taken back. A lower bound past
  // entry_scan_limit pending entries.
  std::int64_t expired_leases = 0;
  std::int64_t delayed = 0;   // first run not due yet (scheduled set, record state scheduled)
  std::int64_t retrying = 0;  // waiting for a retry (scheduled set, record state retry)
  // False when the scheduled set had more members than InspectorOptions::scheduled_scan_limit:
  // delayed + retrying is still exact, their split is extrapolated from the earliest members.
  bool scheduled_split_exact = true;
  std::int64_t dead = 0;  // dead-letter queue size
  std::vector<GroupInfo> groups;
  int consumers = 0;                          // all groups
  int live_consumers = 0;                     // all groups
  std::optional<std::int64_t> oldest_age_ms;  // age of the stream's first entry
  QueueRates rates;
  nlohmann::json ToJson() const;
};

// A pending (delivered, unacked) entry.
struct PendingEntry {
  std::string stream_id;
  std::string task_id;  // "" when the entry is gone from the stream
  std::string consumer;
  std::int64_t idle_ms = 0;  // since it was delivered or its lease last renewed (heartbeat)
  std::int64_t deliveries = 0;
  // When its lease ends (Unix ms, server clock): now - idle_ms + the lease length of its consumer
  // (leases:TYPE, else the namespace's lease_ms). Every pending entry is leased, also one read
  // outside baton_v2_dequeue (a plain XREADGROUP): it gets the namespace's lease_ms.
  std::optional<std::int64_t> lease_deadline_ms;
};

struct PendingConsumer {
  std::string name;
  std::int64_t count = 0;
  // Of its pending entries: the longest since a delivery or heartbeat (grows on a stuck worker).
  std::int64_t max_idle_ms = 0;
  std::int64_t consumer_idle_ms = 0;  // since the consumer itself last talked to Redis
  std::int64_t expired = 0;           // of its entries, those whose lease has ended
};

struct PendingGroup {
  std::string group;
  std::int64_t count = 0;
  std::vector<PendingConsumer> consumers;  // every consumer that holds entries, by name
  // The (up to 10) entries idle the longest (not delivered or renewed for the longest).
  std::vector<PendingEntry> longest_idle;
  bool complete = true;  // false when the PEL had more than entry_scan_limit entries
};

struct PendingReport {
  std::string ns;
  std::string type;
  std::int64_t now_ms = 0;          // server time of the report
  std::int64_t expired_leases = 0;  // pending entries of the type whose lease has ended
  std::vector<PendingGroup> groups;
  nlohmann::json ToJson() const;
};

// active: queued and delivered (its entry is pending in a consumer group, leased to the consumer
// holding it). done, cancelled, deleted and dropped are final: the id
// is in baton:v2:{ns}:done (and, but for done, in ended) for the namespace's done_retention_s.
enum class TaskState {
  kQueued,
  kActive,
  kScheduled,
  kRetry,
  kDead,
  kDone,
  kCancelled,
  kDeleted,
  kDropped,  // removed from the dead-letter queue by its caps (dlq_max, dlq_retention_s)
};
std::string_view TaskStateName(TaskState state);  // "queued", "active", ...

// One failed attempt (baton:v2:{ns}:errors).
struct TaskError {
  int attempt = 0;
  std::string kind;  // error, timeout, non_retryable, malformed, lease_expired
  std::string error;
  std::string stack;
  std::string worker;
  std::int64_t at_ms = 0;
};

// One state change of the task (baton:v2:{ns}:events). An events entry may cover a whole batch;
// this is the task's part of it (its attempt is at the task's position in the entry).
struct TaskEvent {
  std::string event_id;
  std::int64_t at_ms = 0;
  std::string from;
  std::string to;
  int attempt = 0;
  std::string worker;
  std::string error;
};

// The task's entry held by a consumer (XPENDING).
struct TaskLease {
  std::string group;
  std::string consumer;
  std::int64_t idle_ms = 0;  // since the delivery or the last heartbeat (baton_v2_extend)
  std::int64_t deliveries = 0;
  // When this holder's lease ends (Unix ms, server clock): now - idle_ms + the lease length of
  // the consumer (leases:TYPE, else the namespace's lease_ms).
  std::int64_t lease_deadline_ms = 0;
};

// The task body as stored (stream entry fields or baton:v2:{ns}:bodies): text, as written.
struct TaskBody {
  std::string payload;  // JSON object text
  std::string max_retry;
  std::string delay_seconds;
  std::string created_at;
  std::string execution_timeout;  // "" when none
  std::string extra;              // JSON object text or ""
  std::string attempt;            // stream entries only
  // A malformed stream entry's own fields, name -> value as the foreign writer sent them (its
  // dead-letter body keeps them): what the operator needs to fix that producer. Empty otherwise.
  std::vector<std::pair<std::string, std::string>> raw_fields;
};

struct TaskInfo {
  std::string ns;
  std::string id;
  // "" for a done task whose events are gone from the events stream (done keeps no type).
  std::string type;
  TaskState state = TaskState::kQueued;
  // Attempts made: before this delivery (queued, active), failed so far (retry, dead, and the
  // other final states), or in all (done: from its "-> done" event; 0 when that is gone).
  int attempts = 0;
  std::string stream_id;          // queued, active: the stream entry
  std::vector<TaskLease> leases;  // active: the groups whose PEL holds the entry
  // active: when its lease ends (the earliest of `leases`; Unix ms, server clock); past now =
  // expired, not yet taken back by a reaper.
  std::optional<std::int64_t> lease_deadline_ms;
  std::optional<std::int64_t> due_ms;         // scheduled, retry
  std::optional<std::int64_t> dead_since_ms;  // dead
  std::optional<std::int64_t> finished_ms;    // final states (done ZSET score)
  std::string finished_by;                    // done: the worker of its "-> done" event
  std::optional<TaskBody> body;               // absent once finished
  std::vector<TaskError> errors;              // oldest first (cleared when the task succeeds)
  std::vector<TaskEvent> events;              // oldest first
  // False when the event scan stopped at InspectorOptions::event_scan_limit before it reached the
  // task's first event (or the events stream was trimmed past it).
  bool events_complete = true;
  std::int64_t now_ms = 0;  // server time of the inspection
  nlohmann::json ToJson() const;
};

// Which dead tasks an operation applies to. Times are Unix ms of death (inclusive).
struct DeadFilter {
  std::string type;  // "" = every type of the namespace
  std::optional<std::int64_t> since_ms;
  std::optional<std::int64_t> until_ms;
  std::size_t limit = 100;  // 0 = no limit
};

struct DeadTask {
  std::string id;
  std::string type;
  std::int64_t dead_since_ms = 0;
  int attempts = 0;
  std::string kind;        // of the last error
  std::string last_error;  // "" when the history is missing
  nlohmann::json ToJson() const;
};

// Outcome of a replay / purge over many dead tasks.
struct DeadBatchResult {
  std::size_t matched = 0;
  std::size_t succeeded = 0;
  std::vector<std::string> failed_ids;  // with the reason at the same index in `failures`
  std::vector<std::string> failures;
  nlohmann::json ToJson() const;
};

// What the doctor concluded. One code per situation of the troubleshooting checklist ("task
// submitted but never ran", docs/cli.md "baton doctor").
enum class DoctorCode {
  // One task.
  kNotFound,           // no record, no final state
  kScheduled,          // delayed, due later
  kOverdue,            // scheduled or retrying, due in the past, not promoted: no promoter runs
  kRetrying,           // failed, waits for its next attempt
  kDead,               // in the dead-letter queue
  kNoGroup,            // the stream has no consumer group: no worker ever subscribed
  kGroupAfterBacklog,  // the group's position is past the entry, which is not pending: skipped
  // Its lease ended and no reaper took it back (the worker stopped heartbeating).
  kPendingStuck,
  kActive,          // running, within its lease
  kNoLiveConsumer,  // queued, the group has no live consumer
  kQueuedBacklog,   // queued behind other entries, consumers are live
  kLostEntry,       // the record points at a stream entry that does not exist
  kDone,            // finished
  kCancelled,       // cancelled before it ran
  kDeleted,         // deleted from the dead-letter queue
  kDropped,         // dropped from the dead-letter queue by its caps
  // A queue (DoctorQueue) also uses kNoGroup, kGroupAfterBacklog, kPendingStuck, kNoLiveConsumer,
  // kQueuedBacklog, kOverdue and kDead.
  kHealthy,         // consumers live, nothing stuck
  kIdle,            // nothing queued, scheduled or dead
  kBacklogGrowing,  // more tasks arrive than workers take
};
std::string_view DoctorCodeName(DoctorCode code);  // "not_found", "group_after_backlog", ...

enum class Severity { kOk, kInfo, kWarning, kProblem };
std::string_view SeverityName(Severity severity);  // "ok", "info", "warning", "problem"

struct Verdict {
  DoctorCode code = DoctorCode::kNotFound;
  Severity severity = Severity::kInfo;
  std::string message;                              // plain words, with the fix when there is one
  nlohmann::json facts = nlohmann::json::object();  // the numbers behind the message
  nlohmann::json ToJson() const;
};

struct QueueDiagnosis {
  QueueInfo queue;
  std::vector<Verdict> findings;  // worst first; a lone kHealthy or kIdle when nothing to report
  nlohmann::json ToJson() const;
};

// A rescue in progress (docs/rescue.md), as stored in baton:v2:{ns}:rescue:TYPE.
struct RescueState {
  std::string ns;
  std::string type;
  std::string group;         // the broken group G
  std::string rescue_group;  // "<G>.rescue"
  std::string handover_id;   // the stream's last id at start: the rescue owns entries up to it
  std::string group_last_id_before;  // G's last-delivered-id before the start
  std::int64_t started_ms = 0;
  std::int64_t backlog_at_start = 0;  // stream length at start
};

struct RescueProgress {
  RescueState state;
  std::int64_t undelivered = 0;     // entries <= handover not yet delivered to the rescue group
  std::int64_t rescue_pending = 0;  // pending in the rescue group, <= handover
  std::int64_t rescue_pending_after = 0;  // pending in the rescue group, > handover
  std::int64_t group_pending_left = 0;    // G's pending entries <= handover still in the stream
  int rescue_live_consumers = 0;
  int group_live_consumers = 0;  // G's consumers seen lately (they should be stopped)
  bool exact = true;             // false when a count stopped at entry_scan_limit
  // No undelivered or pending entries left in the rescue group: `finish` will not refuse.
  bool ready_to_finish = false;
  nlohmann::json ToJson() const;
};

struct RescueFinishResult {
  RescueState state;
  std::int64_t acked_in_group = 0;  // G's pending entries the rescue drained, acked in G
  std::string group_resumes_after;  // G's last-delivered-id now
  std::int64_t left_behind = 0;     // --force only: entries the rescue had not finished
  nlohmann::json ToJson() const;
};

// Thread-safety: an Inspector is NOT thread-safe (it owns one connection); make one per thread.
// Every method returns kUnavailable when Redis cannot be reached (the next call reconnects),
// kInvalidArgument naming the field when a namespace / type / id breaks its pattern.
class Inspector {
 public:
  // Connects (does not need the functions library: reading works without it; the methods that
  // change state check its version first and fail with kVersionMismatch).
  static StatusOr<std::unique_ptr<Inspector>> Connect(const InspectorOptions& options);
  ~Inspector();
  Inspector(const Inspector&) = delete;
  Inspector& operator=(const Inspector&) = delete;

  // Every namespace in baton:v2:namespaces, sorted.
  StatusOr<std::vector<std::string>> ListNamespaces();
  // The storage namespaces of `ns`'s partitions (docs/cluster.md, "Partitions"): {ns} when it is
  // not partitioned, else ns, ns:1, ..., ns:P-1. Every other call takes each of them as a
  // namespace (ListQueues("shop:2"), ...).
  StatusOr<std::vector<std::string>> ListPartitions(const std::string& ns);
  // One QueueInfo per task type of `ns` (baton:v2:{ns}:types), sorted by type.
  StatusOr<std::vector<QueueInfo>> ListQueues(const std::string& ns);
  // One type (kNotFound when it has no stream, scheduled set or dead-letter queue).
  StatusOr<QueueInfo> GetQueue(const std::string& ns, const std::string& type);
  // The pending entries of every group of (ns, type), per consumer, with their leases.
  StatusOr<PendingReport> Pending(const std::string& ns, const std::string& type);

  // Where the task is and what happened to it. kNotFound when there is neither a live record nor
  // a final state (done ZSET).
  StatusOr<TaskInfo> GetTask(const std::string& ns, const std::string& id);

  // Dead tasks matching the filter, oldest death first.
  StatusOr<std::vector<DeadTask>> ListDead(const std::string& ns, const DeadFilter& filter);
  // Puts a dead task back in its stream with a fresh retry budget (its error history stays);
  // `new_payload` (a JSON object) replaces the payload. Returns the new stream entry id.
  // kNotFound when there is no live task `id`, kConflict when it is live but not dead or when
  // its stored body cannot become a valid task (the message says why and what to do),
  // kInvalidArgument when the payload is not a JSON object, kVersionMismatch (run `baton init`).
  StatusOr<std::string> ReplayDead(const std::string& ns, const std::string& id,
                                   const std::optional<std::string>& new_payload = std::nullopt);
  // Deletes a dead task for good (final state `deleted`, kept for the namespace's
  // done_retention_s). Errors as ReplayDead.
  Status DeleteDead(const std::string& ns, const std::string& id);
  // Replays / deletes every dead task matching the filter (one baton_v2_dlq_replay / _delete per
  // task, pipelined 500 per round trip). A task that fails (it changed meanwhile) is listed in the
  // result; the others still go through.
  StatusOr<DeadBatchResult> ReplayDeadMatching(const std::string& ns, const DeadFilter& filter);
  StatusOr<DeadBatchResult> PurgeDead(const std::string& ns, const DeadFilter& filter);

  // Why a task has not run (or what became of it): one verdict.
  StatusOr<Verdict> Doctor(const std::string& ns, const std::string& id);
  // The health of one queue: every finding, worst first.
  StatusOr<QueueDiagnosis> DoctorQueue(const std::string& ns, const std::string& type);

  // The disaster-recovery consumer group (docs/rescue.md). Start: kNotFound when G or the stream
  // does not exist, kConflict when a rescue of (ns, type) is already in progress.
  StatusOr<RescueProgress> RescueStart(const std::string& ns, const std::string& type,
                                       const std::string& group);
  // kNotFound when no rescue of (ns, type) is in progress.
  StatusOr<RescueProgress> RescueStatus(const std::string& ns, const std::string& type);
  // Hands the stream back to G. kConflict (saying what is left) while the rescue group still has
  // undelivered or pending entries, unless `force`.
  StatusOr<RescueFinishResult> RescueFinish(const std::string& ns, const std::string& type,
                                            bool force);

 private:
  explicit Inspector(std::unique_ptr<internal::InspectorCore> core);
  std::unique_ptr<internal::InspectorCore> core_;
};

}  // namespace baton
