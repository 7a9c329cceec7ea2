// Inspector: the disaster-recovery consumer group (docs/rescue.md). A rescue group `<G>.rescue`
// drains G's backlog with fixed workers while G's (possibly broken) consumers only see new
// entries; `finish` hands the stream back to G with nothing skipped and nothing run twice. The two
// atomic steps are functions of the library (baton_v2_rescue_start / _finish); the status is read
// here.
#include <algorithm>

#include "baton/inspector.h"
#include "broker/functions.h"
#include "broker/keys.h"
#include "inspect/inspector_core.h"
#include "inspect/rescue_key.h"
#include "inspect/stream_id.h"
#include "inspect/stream_state.h"

namespace baton {

using internal::Command;
using internal::Keys;
using internal::Reply;

namespace {

Status CheckGroup(const std::string& group) {
  if (group.empty() || group.find_first_of(" \t\r\n") != std::string::npos) {
    return Status::InvalidArgument("group",
                                   "must be a non-empty consumer group name without spaces");
  }
  return Status::Ok();
}

StatusOr<RescueState> ReadState(internal::InspectorCore& core, const std::string& ns,
                                const std::string& type) {
  Keys keys(ns);
  auto reply = core.Call({"HGETALL", keys.Rescue(type)});
  if (!reply.ok()) return reply.status();
  auto f = internal::FieldMap(*reply);
  if (f.empty()) {
    return Status::NotFound("no rescue of (" + ns + ", " + type +
                            ") is in progress: start one with `baton rescue start`");
  }
  RescueState s;
  s.ns = ns;
  s.type = type;
  s.group = internal::FieldText(f, "group");
  s.rescue_group = internal::FieldText(f, "rescue_group");
  s.handover_id = internal::FieldText(f, "handover_id");
  s.group_last_id_before = internal::FieldText(f, "group_last_id_before");
  s.started_ms = internal::FieldInt(f, "started_ms");
  s.backlog_at_start = internal::FieldInt(f, "backlog_at_start");
  return s;
}

}  // namespace

StatusOr<RescueProgress> Inspector::RescueStatus(const std::string& ns, const std::string& type) {
  if (Status s = internal::CheckNamespaceArg(ns); !s.ok()) return s;
  if (Status s = internal::CheckTypeArg(type); !s.ok()) return s;
  auto state = ReadState(*core_, ns, type);
  if (!state.ok()) return state.status();
  const InspectorOptions& options = core_->options();
  const std::size_t limit = options.entry_scan_limit;
  Keys keys(ns);
  const std::string stream = keys.Stream(type);
  auto snapshot = internal::ReadStreamState(*core_, stream, /*count_ready=*/false);
  if (!snapshot.ok()) return snapshot.status();

  RescueProgress p;
  p.state = std::move(*state);
  const std::string& handover = p.state.handover_id;
  const GroupInfo* rescue = snapshot->FindGroup(p.state.rescue_group);
  const GroupInfo* group = snapshot->FindGroup(p.state.group);
  if (rescue != nullptr) {
    p.rescue_live_consumers = rescue->live_consumers;
    if (internal::CompareStreamIds(rescue->last_delivered_id, handover) < 0) {
      auto n =
          internal::CountEntries(*core_, stream, "(" + rescue->last_delivered_id, handover, limit);
      if (!n.ok()) return n.status();
      p.undelivered = n->count;
      p.exact = p.exact && n->exact;
    }
    auto le =
        internal::CountRange(*core_, "-", limit, [&](const std::string& start, std::size_t count) {
          return Command{"XPENDING", stream, rescue->name, start, handover, std::to_string(count)};
        });
    if (!le.ok()) return le.status();
    auto after = internal::CountRange(
        *core_, "(" + handover, limit, [&](const std::string& start, std::size_t count) {
          return Command{"XPENDING", stream, rescue->name, start, "+", std::to_string(count)};
        });
    if (!after.ok()) return after.status();
    p.rescue_pending = le->count;
    p.rescue_pending_after = after->count;
    p.exact = p.exact && le->exact && after->exact;
  }
  if (group != nullptr) {
    p.group_live_consumers = group->live_consumers;
    std::vector<std::string> held;
    auto n = internal::CountRange(
        *core_, "-", limit,
        [&](const std::string& start, std::size_t count) {
          return Command{"XPENDING", stream, group->name, start, handover, std::to_string(count)};
        },
        &held);
    if (!n.ok()) return n.status();
    p.exact = p.exact && n->exact;
    std::vector<Command> ranges;
    for (const auto& sid : held) ranges.push_back({"XRANGE", stream, sid, sid});
    auto entries = core_->Pipeline(ranges);
    if (!entries.ok()) return entries.status();
    for (const Reply& e : *entries) {
      if (e.is_array() && !e.elements.empty()) ++p.group_pending_left;
    }
  }
  p.ready_to_finish = rescue != nullptr && p.undelivered == 0 && p.rescue_pending == 0 &&
                      p.rescue_pending_after == 0;
  return p;
}

StatusOr<RescueProgress> Inspector::RescueStart(const std::string& ns, const std::string& type,
                                                const std::string& group) {
  if (Status s = internal::CheckNamespaceArg(ns); !s.ok()) return s;
  if (Status s = internal::CheckTypeArg(type); !s.ok()) return s;
  if (Status s = CheckGroup(group); !s.ok()) return s;
  if (Status s = core_->EnsureLibrary(); !s.ok()) return s;
  auto reply =
      core_->Call(internal::fn::RescueStart(ns, type, group, internal::RescueGroupName(group)));
  if (!reply.ok()) return reply.status().WithContext("rescue start");
  return RescueStatus(ns, type);
}

StatusOr<RescueFinishResult> Inspector::RescueFinish(const std::string& ns, const std::string& type,
                                                     bool force) {
  if (Status s = internal::CheckNamespaceArg(ns); !s.ok()) return s;
  if (Status s = internal::CheckTypeArg(type); !s.ok()) return s;
  auto state = ReadState(*core_, ns, type);
  if (!state.ok()) return state.status();
  if (Status s = core_->EnsureLibrary(); !s.ok()) return s;
  auto reply =
      core_->Call(internal::fn::RescueFinish(ns, type, force, core_->options().entry_scan_limit));
  if (!reply.ok()) return reply.status().WithContext("rescue finish");
  if (!reply->is_array() || reply->elements.size() != 3) {
    return Status::Internal("rescue finish: unexpected reply");
  }
  RescueFinishResult result;
  result.state = std::move(*state);
  result.acked_in_group = reply->elements[0].AsInteger();
  result.group_resumes_after = reply->elements[1].AsString();
  result.left_behind = reply->elements[2].AsInteger();
  return result;
}

}  // namespace baton
