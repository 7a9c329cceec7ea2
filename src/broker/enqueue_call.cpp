#include "broker/enqueue_call.h"

#include <algorithm>
#include <map>
#include <utility>

#include "broker/functions.h"
#include "broker/task_codec.h"

namespace baton::internal {

std::vector<EnqueueCall> PlanEnqueueCalls(std::span<const EnqueueItem> items,
                                          std::size_t max_per_call) {
  // Group first (in order of first appearance), then cut each group into calls.
  std::vector<EnqueueCall> groups;
  std::map<std::pair<std::string, std::string>, std::size_t> group_of;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Task& task = items[i].task;
    const std::string& ns = items[i].storage_ns.empty() ? task.ns : items[i].storage_ns;
    auto [it, inserted] = group_of.try_emplace({ns, task.task_type}, groups.size());
    if (inserted) groups.push_back({ns, task.task_type, {}});
    groups[it->second].items.push_back(i);
  }
  std::vector<EnqueueCall> calls;
  for (EnqueueCall& group : groups) {
    for (std::size_t start = 0; start < group.items.size(); start += max_per_call) {
      const std::size_t end = std::min(group.items.size(), start + max_per_call);
      calls.push_back({group.ns, group.task_type,
                       std::vector<std::size_t>(group.items.begin() + static_cast<long>(start),
                                                group.items.begin() + static_cast<long>(end))});
    }
  }
  return calls;
}

std::vector<std::string> BuildEnqueueCommand(const EnqueueCall& call,
                                             std::span<const EnqueueItem> items) {
  std::vector<std::string> unique_keys;
  std::vector<std::string> per_task;
  per_task.reserve(10 * call.items.size());
  for (std::size_t index : call.items) {
    const EnqueueItem& item = items[index];
    if (!item.unique_key.empty()) unique_keys.push_back(item.unique_key);
    for (std::string& value :
         EncodeEnqueueArgs(item.task, item.run_at_ms, item.unique_key, item.unique_ttl_s)) {
      per_task.push_back(std::move(value));
    }
  }
  return fn::Enqueue(call.ns, call.task_type, call.items.size(), unique_keys, std::move(per_task));
}

Status ReadEnqueueReply(const Reply& reply, const EnqueueCall& call,
                        std::span<const EnqueueItem> items, std::vector<EnqueueResult>* results) {
  if (reply.is_error()) return StatusFromErrorReply(reply);
  // A flat array: status, detail for each task in call order.
  if (!reply.is_array() || reply.elements.size() != 2 * call.items.size()) {
    return Status::Internal("baton_enqueue: expected a flat array of " +
                            std::to_string(2 * call.items.size()) + " values (status, detail)");
  }
  for (std::size_t i = 0; i < call.items.size(); ++i) {
    const std::string status = reply.elements[2 * i].AsString();
    const Reply& detail = reply.elements[2 * i + 1];
    EnqueueResult& result = (*results)[call.items[i]];
    result.task_id = items[call.items[i]].task.task_id;
    if (status == "queued") {
      result.outcome = EnqueueOutcome::kQueued;
      result.stream_id = detail.AsString();
    } else if (status == "scheduled") {
      result.outcome = EnqueueOutcome::kScheduled;
      result.due_ms = detail.AsInteger();
    } else if (status == "duplicate") {
      result.outcome = EnqueueOutcome::kDuplicate;
      result.detail = detail.AsString();
    } else if (status == "unique_conflict") {
      result.outcome = EnqueueOutcome::kUniqueConflict;
      result.detail = detail.AsString();
    } else {
      return Status::Internal("baton_enqueue: unknown result status '" + status + "'");
    }
  }
  return Status::Ok();
}

}  // namespace baton::internal
