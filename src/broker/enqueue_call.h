#pragma once
// Batching of baton_v2_enqueue calls (docs/protocol.md "baton_enqueue"): tasks are grouped by
// (namespace, task_type), since one call touches one stream, and each group is cut into calls of
// at most kMaxTasksPerEnqueueCall tasks so that no single call holds Redis for long.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "baton/client.h"
#include "baton/status.h"
#include "baton/task.h"
#include "broker/redis_connection.h"

namespace baton::internal {

inline constexpr std::size_t kMaxTasksPerEnqueueCall = 256;

// One validated task with its scheduling arguments.
struct EnqueueItem {
  Task task;
  std::int64_t run_at_ms = 0;  // 0: server now + delay_seconds
  std::string unique_key;      // "" = none
  std::int64_t unique_ttl_s = 0;
  // The storage namespace whose keys the task goes to: a partition "ns:p" of a partitioned
  // namespace (broker/partitions.h), or "" for task.ns itself.
  std::string storage_ns;
};

// One baton_enqueue call: positions into the item list, all of one (storage ns, type), in request
// order.
struct EnqueueCall {
  std::string ns;
  std::string task_type;
  std::vector<std::size_t> items;
};

// Groups items by (storage ns, task_type) in order of first appearance, each group split into calls
// of at most `max_per_call` (> 0) items. Every item appears in exactly one call.
std::vector<EnqueueCall> PlanEnqueueCalls(std::span<const EnqueueItem> items,
                                          std::size_t max_per_call = kMaxTasksPerEnqueueCall);

// The full FCALL baton_v2_enqueue command of one call (fn::Enqueue).
std::vector<std::string> BuildEnqueueCommand(const EnqueueCall& call,
                                             std::span<const EnqueueItem> items);

// Reads the reply of one call into (*results)[call.items[i]] (results sized like items). An error
// reply becomes its Status (BATON_INVALID -> kInvalidArgument, ...); a reply of another shape is
// kInternal.
Status ReadEnqueueReply(const Reply& reply, const EnqueueCall& call,
                        std::span<const EnqueueItem> items, std::vector<EnqueueResult>* results);

}  // namespace baton::internal
