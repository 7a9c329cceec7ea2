#include "inspect/task_lookup.h"

#include "core/keys.h"
#include "inspect/event_scan.h"

namespace baton::internal {

namespace {

// Events older than the task's created_at minus this cannot be the task's (created_at is the
// producer's clock, which may be behind the server's).
constexpr std::int64_t kClockSkewMarginMs = 300000;

Status LocateQueued(InspectorCore& core, const Keys& keys, TaskLookup& lookup) {
  TaskInfo& info = lookup.info;
  std::string stream = keys.Stream(info.type);
  auto state = ReadStreamState(core, stream, core.options().live_consumer_window.count());
  if (!state.ok()) return state.status();
  lookup.stream = std::move(*state);

  std::vector<Command> commands = {{"XRANGE", stream, info.stream_id, info.stream_id}};
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
  for (std::size_t i = 0; i < lookup.stream.groups.size(); ++i) {
    const Reply& pending = (*replies)[i + 1];
    if (!pending.is_array() || pending.elements.empty()) continue;
    const Reply& p = pending.elements[0];
    if (p.elements.size() < 4) continue;
    info.leases.push_back({lookup.stream.groups[i].name, p.elements[1].AsString(),
                           p.elements[2].AsInteger(), p.elements[3].AsInteger()});
  }
  if (!info.leases.empty()) info.state = TaskState::kActive;
  return Status::Ok();
}

}  // namespace

StatusOr<TaskLookup> LookupTask(InspectorCore& core, const std::string& ns, const std::string& id,
                                bool with_events) {
  if (Status s = CheckNamespaceArg(ns); !s.ok()) return s;
  if (Status s = CheckTaskIdArg(id); !s.ok()) return s;
  Keys keys(ns);
  auto now = core.ServerTimeMs();
  if (!now.ok()) return now.status();

  auto replies = core.Pipeline({{"HGET", keys.Tasks(), id},
                                {"GET", keys.Done(id)},
                                {"HGET", keys.Errors(), id},
                                {"HGET", keys.Bodies(), id}});
  if (!replies.ok()) return replies.status();
  for (const Reply& r : *replies) {
    if (r.is_error()) return ReplyStatus(r);
  }
  const Reply& record_reply = (*replies)[0];
  const Reply& marker_reply = (*replies)[1];

  TaskLookup lookup;
  TaskInfo& info = lookup.info;
  info.ns = ns;
  info.id = id;
  info.now_ms = *now;
  if (!(*replies)[2].is_nil()) info.errors = ParseErrors((*replies)[2].str);

  if (!record_reply.is_nil()) {
    lookup.record = ParseTaskRecord(record_reply.str);
    if (!lookup.record) {
      return Status::Internal("task " + id + ": record \"" + record_reply.str +
                              "\" is not STATE|TYPE|ATTEMPT|SID");
    }
    const TaskRecord& record = *lookup.record;
    info.type = record.type;
    info.attempts = record.attempt;
    if (!(*replies)[3].is_nil()) info.body = ParseStoredBody((*replies)[3].str);
    if (record.state == "queued") {
      info.state = TaskState::kQueued;
      info.stream_id = record.sid;
      if (Status s = LocateQueued(core, keys, lookup); !s.ok()) return s;
    } else if (record.state == "scheduled" || record.state == "retry") {
      info.state = record.state == "retry" ? TaskState::kRetry : TaskState::kScheduled;
      auto due = core.Call({"ZSCORE", keys.Scheduled(record.type), id});
      if (!due.ok()) return due.status();
      if (!due->is_nil()) info.due_ms = ScoreMs(*due);
    } else if (record.state == "dead") {
      info.state = TaskState::kDead;
      auto since = core.Call({"ZSCORE", keys.Dead(record.type), id});
      if (!since.ok()) return since.status();
      if (!since->is_nil()) info.dead_since_ms = ScoreMs(*since);
    } else {
      return Status::Internal("task " + id + ": unknown state \"" + record.state + "\"");
    }
  } else if (!marker_reply.is_nil()) {
    auto final_record = ParseFinalRecord(marker_reply.str);
    if (!final_record) {
      return Status::Internal("task " + id + ": done marker \"" + marker_reply.str +
                              "\" is not a JSON object");
    }
    info.type = final_record->type;
    info.attempts = final_record->attempts;
    info.finished_ms = final_record->finished_ms;
    info.finished_by = final_record->worker;
    if (final_record->state == "cancelled") {
      info.state = TaskState::kCancelled;
    } else if (final_record->state == "deleted") {
      info.state = TaskState::kDeleted;
    } else {
      info.state = TaskState::kDone;
    }
  } else {
    return Status::NotFound("task " + id + " not found in namespace " + ns +
                            ": no live record and no done marker (never enqueued here, or it "
                            "finished longer ago than the retention)");
  }

  if (with_events) {
    std::int64_t oldest = 0;
    if (info.body && BodyCreatedAt(*info.body) > 0) {
      oldest = BodyCreatedAt(*info.body) * 1000 - kClockSkewMarginMs;
    }
    auto timeline =
        ScanTaskEvents(core, keys.Events(), id, oldest, core.options().event_scan_limit);
    if (!timeline.ok()) return timeline.status();
    info.events = std::move(timeline->events);
    info.events_complete = timeline->complete;
  }
  return lookup;
}

}  // namespace baton::internal
