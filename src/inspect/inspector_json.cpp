// The --json form of every Inspector result. Field names are stable: scripts and the web console
// rely on them (docs/cli.md lists them).
#include "baton/inspector.h"
#include "inspect/task_record.h"
#include "inspect/utf8_text.h"

namespace baton {

namespace {

// Every string shown comes from Redis and may hold any bytes: make them valid UTF-8 so that no
// caller's dump() throws (type_error.316).
nlohmann::json Valid(nlohmann::json document) {
  internal::MakeValidUtf8(document);
  return document;
}

nlohmann::json Optional(const std::optional<std::int64_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json GroupToJson(const GroupInfo& g) {
  nlohmann::json consumers = nlohmann::json::array();
  for (const auto& c : g.consumers) {
    consumers.push_back(
        {{"name", c.name}, {"pending", c.pending}, {"idle_ms", c.idle_ms}, {"live", c.live}});
  }
  return {{"name", g.name},
          {"last_delivered_id", g.last_delivered_id},
          {"pending", g.pending},
          {"lag", Optional(g.lag)},
          {"ready", g.ready},
          {"ready_exact", g.ready_exact},
          {"live_consumers", g.live_consumers},
          {"consumers", consumers}};
}

}  // namespace

std::string_view TaskStateName(TaskState state) {
  switch (state) {
    case TaskState::kQueued:
      return "queued";
    case TaskState::kActive:
      return "active";
    case TaskState::kScheduled:
      return "scheduled";
    case TaskState::kRetry:
      return "retry";
    case TaskState::kDead:
      return "dead";
    case TaskState::kDone:
      return "done";
    case TaskState::kCancelled:
      return "cancelled";
    case TaskState::kDeleted:
      return "deleted";
    case TaskState::kDropped:
      return "dropped";
  }
  return "unknown";
}

std::string_view DoctorCodeName(DoctorCode code) {
  switch (code) {
    case DoctorCode::kNotFound:
      return "not_found";
    case DoctorCode::kScheduled:
      return "scheduled";
    case DoctorCode::kOverdue:
      return "overdue";
    case DoctorCode::kRetrying:
      return "retrying";
    case DoctorCode::kDead:
      return "dead";
    case DoctorCode::kNoGroup:
      return "no_group";
    case DoctorCode::kGroupAfterBacklog:
      return "group_after_backlog";
    case DoctorCode::kPendingStuck:
      return "pending_stuck";
    case DoctorCode::kActive:
      return "active";
    case DoctorCode::kNoLiveConsumer:
      return "no_live_consumer";
    case DoctorCode::kQueuedBacklog:
      return "queued_backlog";
    case DoctorCode::kLostEntry:
      return "lost_entry";
    case DoctorCode::kDone:
      return "done";
    case DoctorCode::kCancelled:
      return "cancelled";
    case DoctorCode::kDeleted:
      return "deleted";
    case DoctorCode::kDropped:
      return "dropped";
    case DoctorCode::kHealthy:
      return "healthy";
    case DoctorCode::kIdle:
      return "idle";
    case DoctorCode::kBacklogGrowing:
      return "backlog_growing";
  }
  return "unknown";
}

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kOk:
      return "ok";
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kProblem:
      return "problem";
  }
  return "unknown";
}

nlohmann::json QueueInfo::ToJson() const {
  nlohmann::json groups_json = nlohmann::json::array();
  for (const auto& g : groups) groups_json.push_back(GroupToJson(g));
  return Valid(nlohmann::json{{"namespace", ns},
                              {"type", type},
                              {"stream_length", stream_length},
                              {"ready", ready},
                              {"ready_exact", ready_exact},
                              {"in_flight", in_flight},
                              {"leased", leased},
                              {"expired_leases", expired_leases},
                              {"delayed", delayed},
                              {"retrying", retrying},
                              {"scheduled_split_exact", scheduled_split_exact},
                              {"dead", dead},
                              {"consumers", consumers},
                              {"live_consumers", live_consumers},
                              {"oldest_age_ms", Optional(oldest_age_ms)},
                              {"rate",
                               {{"window_ms", rates.window_ms},
                                {"done", rates.done},
                                {"failed", rates.failed},
                                {"queued", rates.queued},
                                {"started", rates.started},
                                {"dropped", rates.dropped},
                                {"exact", rates.exact}}},
                              {"groups", groups_json}});
}

nlohmann::json PendingReport::ToJson() const {
  nlohmann::json groups_json = nlohmann::json::array();
  for (const auto& g : groups) {
    nlohmann::json consumers = nlohmann::json::array();
    for (const auto& c : g.consumers) {
      consumers.push_back({{"name", c.name},
                           {"count", c.count},
                           {"max_idle_ms", c.max_idle_ms},
                           {"consumer_idle_ms", c.consumer_idle_ms},
                           {"expired", c.expired}});
    }
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& e : g.longest_idle) {
      entries.push_back({{"stream_id", e.stream_id},
                         {"task_id", e.task_id},
                         {"consumer", e.consumer},
                         {"idle_ms", e.idle_ms},
                         {"deliveries", e.deliveries},
                         {"lease_deadline_ms", Optional(e.lease_deadline_ms)}});
    }
    groups_json.push_back({{"group", g.group},
                           {"count", g.count},
                           {"complete", g.complete},
                           {"consumers", consumers},
                           {"longest_idle", entries}});
  }
  return Valid(nlohmann::json{{"namespace", ns},
                              {"type", type},
                              {"now_ms", now_ms},
                              {"expired_leases", expired_leases},
                              {"groups", groups_json}});
}

nlohmann::json TaskInfo::ToJson() const {
  nlohmann::json leases_json = nlohmann::json::array();
  for (const auto& l : leases) {
    leases_json.push_back({{"group", l.group},
                           {"consumer", l.consumer},
                           {"idle_ms", l.idle_ms},
                           {"deliveries", l.deliveries},
                           {"lease_deadline_ms", l.lease_deadline_ms}});
  }
  nlohmann::json events_json = nlohmann::json::array();
  for (const auto& e : events) {
    events_json.push_back({{"event_id", e.event_id},
                           {"at_ms", e.at_ms},
                           {"from", e.from},
                           {"to", e.to},
                           {"attempt", e.attempt},
                           {"worker", e.worker},
                           {"error", e.error}});
  }
  return Valid(nlohmann::json{
      {"namespace", ns},
      {"task_id", id},
      {"type", type},
      {"state", TaskStateName(state)},
      {"attempts", attempts},
      {"stream_id", stream_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(stream_id)},
      {"leases", leases_json},
      {"lease_deadline_ms", Optional(lease_deadline_ms)},
      {"due_ms", Optional(due_ms)},
      {"dead_since_ms", Optional(dead_since_ms)},
      {"finished_ms", Optional(finished_ms)},
      {"finished_by", finished_by},
      {"body", body ? internal::BodyToJson(*body) : nlohmann::json(nullptr)},
      {"errors", internal::ErrorsToJson(errors)},
      {"events", events_json},
      {"events_complete", events_complete},
      {"now_ms", now_ms}});
}

nlohmann::json DeadTask::ToJson() const {
  return Valid(nlohmann::json{{"task_id", id},
                              {"type", type},
                              {"dead_since_ms", dead_since_ms},
                              {"attempts", attempts},
                              {"kind", kind},
                              {"last_error", last_error}});
}

nlohmann::json DeadBatchResult::ToJson() const {
  nlohmann::json failed = nlohmann::json::array();
  for (std::size_t i = 0; i < failed_ids.size(); ++i) {
    failed.push_back({{"task_id", failed_ids[i]}, {"error", failures[i]}});
  }
  return Valid(nlohmann::json{{"matched", matched}, {"succeeded", succeeded}, {"failed", failed}});
}

nlohmann::json Verdict::ToJson() const {
  return Valid(nlohmann::json{{"code", DoctorCodeName(code)},
                              {"severity", SeverityName(severity)},
                              {"message", message},
                              {"facts", facts}});
}

nlohmann::json QueueDiagnosis::ToJson() const {
  nlohmann::json findings_json = nlohmann::json::array();
  for (const auto& f : findings) findings_json.push_back(f.ToJson());
  return {{"queue", queue.ToJson()}, {"findings", findings_json}};
}

namespace {

nlohmann::json RescueStateToJson(const RescueState& s) {
  return {{"namespace", s.ns},
          {"type", s.type},
          {"group", s.group},
          {"rescue_group", s.rescue_group},
          {"handover_id", s.handover_id},
          {"group_last_id_before", s.group_last_id_before},
          {"started_ms", s.started_ms},
          {"backlog_at_start", s.backlog_at_start}};
}

}  // namespace

nlohmann::json RescueProgress::ToJson() const {
  nlohmann::json out = RescueStateToJson(state);
  out["undelivered"] = undelivered;
  out["rescue_pending"] = rescue_pending;
  out["rescue_pending_after"] = rescue_pending_after;
  out["group_pending_left"] = group_pending_left;
  out["rescue_live_consumers"] = rescue_live_consumers;
  out["group_live_consumers"] = group_live_consumers;
  out["exact"] = exact;
  out["ready_to_finish"] = ready_to_finish;
  return Valid(std::move(out));
}

nlohmann::json RescueFinishResult::ToJson() const {
  nlohmann::json out = RescueStateToJson(state);
  out["acked_in_group"] = acked_in_group;
  out["group_resumes_after"] = group_resumes_after;
  out["left_behind"] = left_behind;
  return Valid(std::move(out));
}

}  // namespace baton
