// Inspector: the dead-letter queue (list, replay, delete, purge). Writes go through the functions
// library (baton_v2_dlq_replay, baton_v2_dlq_delete, built by broker/functions.h), so they follow
// the state machine and emit events.
#include <algorithm>

#include "baton/inspector.h"
#include "baton/task.h"
#include "broker/functions.h"
#include "broker/keys.h"
#include "inspect/inspector_core.h"
#include "inspect/task_record.h"

namespace baton {

using internal::Command;
using internal::Keys;
using internal::Reply;

namespace {

constexpr std::size_t kBatch = 500;  // FCALLs per pipelined round trip

std::string ScoreArg(const std::optional<std::int64_t>& ms, const char* open_end) {
  return ms ? std::to_string(*ms) : std::string(open_end);
}

Status CheckPayload(const std::string& payload) {
  auto parsed = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return Status::InvalidArgument("payload", "must be a JSON object");
  }
  if (payload.size() > kMaxPayloadBytes) {
    return Status::InvalidArgument(
        "payload",
        "must be at most " + std::to_string(kMaxPayloadBytes) + " bytes once serialized");
  }
  return Status::Ok();
}

// The type of a dead task, from its record. kNotFound / kConflict say why it is not dead.
StatusOr<std::string> DeadTaskType(internal::InspectorCore& core, const Keys& keys,
                                   const std::string& ns, const std::string& id) {
  auto rec = core.Call({"HGET", keys.Tasks(), id});
  if (!rec.ok()) return rec.status();
  if (rec->is_nil()) {
    return Status::NotFound("task " + id + " is not in the dead-letter queue of namespace " + ns +
                            " (no live task with that id)");
  }
  auto record = internal::ParseTaskRecord(rec->str);
  if (!record || record->state != "dead") {
    return Status::Conflict("task " + id + " is " + (record ? record->state : "unknown") +
                            ", not dead: only dead tasks can be replayed or deleted");
  }
  return record->type;
}

}  // namespace

StatusOr<std::vector<DeadTask>> Inspector::ListDead(const std::string& ns,
                                                    const DeadFilter& filter) {
  if (Status s = internal::CheckNamespaceArg(ns); !s.ok()) return s;
  if (!filter.type.empty()) {
    if (Status s = internal::CheckTypeArg(filter.type); !s.ok()) return s;
  }
  Keys keys(ns);
  std::vector<std::string> types;
  if (!filter.type.empty()) {
    types.push_back(filter.type);
  } else {
    auto members = core_->Call({"SMEMBERS", keys.Types()});
    if (!members.ok()) return members.status();
    for (const Reply& m : members->elements) types.push_back(m.AsString());
    std::sort(types.begin(), types.end());
  }
  std::vector<Command> ranges;
  for (const auto& type : types) {
    Command c = {"ZRANGEBYSCORE", keys.Dead(type), ScoreArg(filter.since_ms, "-inf"),
                 ScoreArg(filter.until_ms, "+inf"), "WITHSCORES"};
    if (filter.limit > 0) {
      c.insert(c.end(), {"LIMIT", "0", std::to_string(filter.limit)});
    }
    ranges.push_back(std::move(c));
  }
  auto replies = core_->Pipeline(ranges);
  if (!replies.ok()) return replies.status();
  std::vector<DeadTask> dead;
  for (std::size_t t = 0; t < types.size(); ++t) {
    const Reply& r = (*replies)[t];
    if (r.is_error()) return internal::ReplyStatus(r);
    for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) {
      DeadTask d;
      d.id = r.elements[i].AsString();
      d.type = types[t];
      d.dead_since_ms = internal::ScoreMs(r.elements[i + 1]);
      dead.push_back(std::move(d));
    }
  }
  std::stable_sort(dead.begin(), dead.end(), [](const DeadTask& a, const DeadTask& b) {
    return a.dead_since_ms < b.dead_since_ms;
  });
  if (filter.limit > 0 && dead.size() > filter.limit) dead.resize(filter.limit);

  // Attempts and last error, in chunks.
  for (std::size_t start = 0; start < dead.size(); start += kBatch) {
    std::size_t end = std::min(dead.size(), start + kBatch);
    Command records = {"HMGET", keys.Tasks()};
    std::vector<std::string> ids;
    for (std::size_t i = start; i < end; ++i) {
      records.push_back(dead[i].id);
      ids.push_back(dead[i].id);
    }
    auto details = core_->Call(records);
    if (!details.ok()) return details.status();
    auto newest = internal::ReadErrorHistories(*core_, keys.Errors(), ids, /*newest_only=*/true);
    if (!newest.ok()) return newest.status();
    for (std::size_t i = start; i < end; ++i) {
      const Reply& rec = details->elements[i - start];
      if (!rec.is_nil()) {
        if (auto record = internal::ParseTaskRecord(rec.str)) dead[i].attempts = record->attempt;
      }
      const std::vector<TaskError>& history = (*newest)[i - start];
      if (!history.empty()) {
        dead[i].kind = history.back().kind;
        dead[i].last_error = history.back().error;
      }
    }
  }
  return dead;
}

StatusOr<std::string> Inspector::ReplayDead(const std::string& ns, const std::string& id,
                                            const std::optional<std::string>& new_payload) {
  if (Status s = internal::CheckNamespaceArg(ns); !s.ok()) return s;
  if (Status s = internal::CheckTaskIdArg(id); !s.ok()) return s;
  if (new_payload) {
    if (Status s = CheckPayload(*new_payload); !s.ok()) return s;
  }
  if (Status s = core_->EnsureLibrary(); !s.ok()) return s;
  Keys keys(ns);
  auto type = DeadTaskType(*core_, keys, ns, id);
  if (!type.ok()) return type.status();
  auto sid = core_->Call(internal::fn::DlqReplay(ns, *type, id, new_payload.value_or("")));
  if (!sid.ok()) return sid.status();
  return sid->AsString();
}

Status Inspector::DeleteDead(const std::string& ns, const std::string& id) {
  if (Status s = internal::CheckNamespaceArg(ns); !s.ok()) return s;
  if (Status s = internal::CheckTaskIdArg(id); !s.ok()) return s;
  if (Status s = core_->EnsureLibrary(); !s.ok()) return s;
  Keys keys(ns);
  auto type = DeadTaskType(*core_, keys, ns, id);
  if (!type.ok()) return type.status();
  auto reply = core_->Call(internal::fn::DlqDelete(ns, *type, id));
  return reply.ok() ? Status::Ok() : reply.status();
}

namespace {

// Runs one FCALL per dead task, pipelined in batches.
template <typename MakeCommand>
StatusOr<DeadBatchResult> ForEachDead(internal::InspectorCore& core,
                                      const std::vector<DeadTask>& dead, MakeCommand make) {
  DeadBatchResult result;
  result.matched = dead.size();
  for (std::size_t start = 0; start < dead.size(); start += kBatch) {
    std::size_t end = std::min(dead.size(), start + kBatch);
    std::vector<Command> commands;
    for (std::size_t i = start; i < end; ++i) commands.push_back(make(dead[i]));
    auto replies = core.Pipeline(commands);
    if (!replies.ok()) return replies.status();
    for (std::size_t i = start; i < end; ++i) {
      const Reply& r = (*replies)[i - start];
      if (r.is_error()) {
        result.failed_ids.push_back(dead[i].id);
        result.failures.push_back(internal::ReplyStatus(r).ToString());
      } else {
        ++result.succeeded;
      }
    }
  }
  return result;
}

}  // namespace

StatusOr<DeadBatchResult> Inspector::ReplayDeadMatching(const std::string& ns,
                                                        const DeadFilter& filter) {
  auto dead = ListDead(ns, filter);
  if (!dead.ok()) return dead.status();
  if (Status s = core_->EnsureLibrary(); !s.ok()) return s;
  return ForEachDead(*core_, *dead, [&](const DeadTask& d) {
    return internal::fn::DlqReplay(ns, d.type, d.id, "");
  });
}

StatusOr<DeadBatchResult> Inspector::PurgeDead(const std::string& ns, const DeadFilter& filter) {
  auto dead = ListDead(ns, filter);
  if (!dead.ok()) return dead.status();
  if (Status s = core_->EnsureLibrary(); !s.ok()) return s;
  return ForEachDead(*core_, *dead,
                     [&](const DeadTask& d) { return internal::fn::DlqDelete(ns, d.type, d.id); });
}

}  // namespace baton
