#include "inspect/task_lookup.h"

#include "broker/keys.h"
#include "broker/partitions.h"
#include "inspect/event_scan.h"
#include "inspect/lease_scan.h"

namespace baton::internal {

namespace {

// Events older than the task's created_at minus this cannot be the task's (created_at is the
// producer's clock, which may be behind the server's).
constexpr std::int64_t kClockSkewMarginMs = 300000;
// Events newer than the task's finish time plus this cannot be the task's (the final event is
// written in the same call as the final state; the margin covers a slow call).
constexpr std::int64_t kFinishMarginMs = 60000;

Status LocateQueued(InspectorCore& core, const Keys& keys, TaskLookup& lookup) {
  TaskInfo& info = lookup.info;
  std::string stream = keys.Stream(info.type);
  auto state = ReadStreamState(core, stream, /*count_ready=*/false);
  if (!state.ok()) return state.status();
  lookup.stream = std::move(*state);

  // TIME right before the XPENDINGs: a lease ends `idle` after that instant plus its length.
  std::vector<Command> commands = {{"XRANGE", stream, info.stream_id, info.stream_id},
                                   {"HGETALL", keys.Leases(info.type)},
                                   {"HGET", keys.Config(), "lease_ms"},
                                   {"TIME"}};
  constexpr std::size_t kFirstPending = 4;
  for (const auto& g : lookup.stream.groups) {
    commands.push_back({"XPENDING", stream, g.name, info.stream_id, info.stream_id, "1"});
  }
  auto replies = core.Pipeline(commands);
  if (!replies.ok()) return replies.status();
  const Reply& range = (*replies)[0];
  if (range.is_array() && !range.elements.empty() && range.elements[0].elements.size() >= 2) {
    info.body = BodyFromEntry(range.elements[0].elements[1]);
  } else {
    lookup.entry_missing = true;
  }
  for (std::size_t i = 1; i < kFirstPending; ++i) {
    if ((*replies)[i].is_error()) return ReplyStatus((*replies)[i]);
  }
  const LeaseLengths lengths = ParseLeaseLengths((*replies)[1], (*replies)[2]);
  const Reply& time = (*replies)[3];
  std::int64_t now_ms = info.now_ms;
  if (time.is_array() && time.elements.size() == 2) {
    now_ms = time.elements[0].AsInteger() * 1000 + time.elements[1].AsInteger() / 1000;
  }
  // Delivered: pending in a group, leased to the consumer holding it. When several groups hold
  // the entry (a rescue), the lease that ends first is the task's: reclaim then takes it back.
  for (std::size_t i = 0; i < lookup.stream.groups.size(); ++i) {
    const Reply& pending = (*replies)[i + kFirstPending];
    if (!pending.is_array() || pending.elements.empty()) continue;
    const Reply& p = pending.elements[0];
    if (p.elements.size() < 4) continue;
    TaskLease lease{lookup.stream.groups[i].name, p.elements[1].AsString(),
                    p.elements[2].AsInteger(), p.elements[3].AsInteger(), 0};
    lease.lease_deadline_ms = lengths.EndMs(lease.consumer, lease.idle_ms, now_ms);
    if (!info.lease_deadline_ms || lease.lease_deadline_ms < *info.lease_deadline_ms) {
      info.lease_deadline_ms = lease.lease_deadline_ms;
    }
    info.state = TaskState::kActive;
    info.leases.push_back(std::move(lease));
  }
  return Status::Ok();
}

Status LocateLive(InspectorCore& core, const Keys& keys, const std::string& text, const Reply& body,
                  TaskLookup& lookup) {
  TaskInfo& info = lookup.info;
  lookup.record = ParseTaskRecord(text);
  if (!lookup.record) {
    return Status::Internal("task " + info.id + ": record \"" + text +
                            "\" is not STATE|TYPE|ATTEMPT|SID");
  }
  const TaskRecord& record = *lookup.record;
  info.type = record.type;
  info.attempts = record.attempt;
  if (!body.is_nil()) info.body = ParseStoredBody(body.str);
  if (record.state == "queued") {
    info.state = TaskState::kQueued;
    info.stream_id = record.sid;
    return LocateQueued(core, keys, lookup);
  }
  if (record.state == "scheduled" || record.state == "retry") {
    info.state = record.state == "retry" ? TaskState::kRetry : TaskState::kScheduled;
    auto due = core.Call({"ZSCORE", keys.Scheduled(record.type), info.id});
    if (!due.ok()) return due.status();
    if (!due->is_nil()) info.due_ms = ScoreMs(*due);
    return Status::Ok();
  }
  if (record.state == "dead") {
    info.state = TaskState::kDead;
    auto since = core.Call({"ZSCORE", keys.Dead(record.type), info.id});
    if (!since.ok()) return since.status();
    if (!since->is_nil()) info.dead_since_ms = ScoreMs(*since);
    return Status::Ok();
  }
  return Status::Internal("task " + info.id + ": unknown state \"" + record.state + "\"");
}

// A final state: done (no ended value) or the ended value's state.
Status LocateFinal(const std::string& id, const Reply& finished, const Reply& ended,
                   TaskInfo& info) {
  info.finished_ms = ScoreMs(finished);
  if (ended.is_nil()) {
    info.state = TaskState::kDone;  // type, attempts and worker come from the events
    return Status::Ok();
  }
  auto record = ParseEndedRecord(ended.str);
  if (!record) {
    return Status::Internal("task " + id + ": ended value \"" + ended.str +
                            "\" is not STATE|TYPE|ATTEMPTS|WORKER");
  }
  info.type = record->type;
  info.attempts = record->attempts;
  if (record->state == "cancelled") {
    info.state = TaskState::kCancelled;
  } else if (record->state == "deleted") {
    info.state = TaskState::kDeleted;
  } else if (record->state == "dropped") {
    info.state = TaskState::kDropped;
  } else {
    return Status::Internal("task " + id + ": unknown final state \"" + record->state + "\"");
  }
  return Status::Ok();
}

// What only the events say of a done task: its type, and the run that succeeded (attempt, worker).
void FillDoneFromEvents(const TaskTimeline& timeline, TaskInfo& info) {
  if (info.type.empty()) info.type = timeline.type;
  for (auto it = timeline.events.rbegin(); it != timeline.events.rend(); ++it) {
    if (it->to == "done") {
      info.attempts = it->attempt;
      info.finished_by = it->worker;
      return;
    }
  }
}

// LookupTask in one storage namespace (a namespace, or one partition of it).
StatusOr<TaskLookup> LookupTaskIn(InspectorCore& core, const std::string& ns, const std::string& id,
                                  bool with_events) {
  Keys keys(ns);
  auto now = core.ServerTimeMs();
  if (!now.ok()) return now.status();

  auto replies = core.Pipeline({{"HGET", keys.Tasks(), id},
                                {"ZSCORE", keys.Done(), id},
                                {"HGET", keys.Ended(), id},
                                {"HGET", keys.Bodies(), id}});
  if (!replies.ok()) return replies.status();
  for (const Reply& r : *replies) {
    if (r.is_error()) return ReplyStatus(r);
  }
  const Reply& record = (*replies)[0];
  const Reply& finished = (*replies)[1];

  TaskLookup lookup;
  TaskInfo& info = lookup.info;
  info.ns = ns;
  info.id = id;
  info.now_ms = *now;
  auto errors = ReadErrorHistories(core, keys.Errors(), {id});
  if (!errors.ok()) return errors.status();
  info.errors = std::move(errors->front());

  if (!record.is_nil()) {
    if (Status s = LocateLive(core, keys, record.str, (*replies)[3], lookup); !s.ok()) return s;
  } else if (!finished.is_nil()) {
    if (Status s = LocateFinal(id, finished, (*replies)[2], info); !s.ok()) return s;
  } else {
    return Status::NotFound("task " + id + " not found in namespace " + ns +
                            ": no live record and no final state (never enqueued here, or it "
                            "finished longer ago than the namespace's done_retention_s)");
  }

  const bool done = info.state == TaskState::kDone;
  if (with_events || done) {
    EventWindow window;
    if (info.body && BodyCreatedAt(*info.body) > 0) {
      window.oldest_ms = BodyCreatedAt(*info.body) * 1000 - kClockSkewMarginMs;
    }
    if (info.finished_ms) window.newest_ms = *info.finished_ms + kFinishMarginMs;
    auto timeline =
        ScanTaskEvents(core, keys.Events(), id, window, core.options().event_scan_limit);
    if (!timeline.ok()) return timeline.status();
    if (done) FillDoneFromEvents(*timeline, info);
    if (with_events) {
      info.events = std::move(timeline->events);
      info.events_complete = timeline->complete;
    }
  }
  return lookup;
}

}  // namespace

StatusOr<TaskLookup> LookupTask(InspectorCore& core, const std::string& ns, const std::string& id,
                                bool with_events) {
  if (Status s = CheckNamespaceArg(ns); !s.ok()) return s;
  if (Status s = CheckTaskIdArg(id); !s.ok()) return s;
  if (PartitionNumber(ns) != 0) return LookupTaskIn(core, ns, id, with_events);
  // A partitioned namespace: the id's partition (where producers put it), then the others (a task
  // enqueued before the count grew). The error names the namespace, not a partition.
  auto count = PartitionCount(core, ns);
  if (!count.ok()) return count.status();
  const int partitions = *count;
  const int first = PartitionOf(id, partitions);
  StatusOr<TaskLookup> found = LookupTaskIn(core, PartitionNamespace(ns, first), id, with_events);
  for (int p = 0; p < partitions && !found.ok() && found.status().code() == StatusCode::kNotFound;
       ++p) {
    if (p != first) found = LookupTaskIn(core, PartitionNamespace(ns, p), id, with_events);
  }
  if (!found.ok() && found.status().code() == StatusCode::kNotFound && partitions > 1) {
    return Status::NotFound("task " + id + " not found in namespace " + ns + " (any of its " +
                            std::to_string(partitions) +
                            " partitions): no live record and no final state (never enqueued "
                            "here, or it finished longer ago than the namespace's "
                            "done_retention_s)");
  }
  return found;
}

}  // namespace baton::internal
