#pragma once
// Converts between a Task and the wire form of the functions library (docs/protocol.md): the
// per-task ARGV of baton_enqueue and the per-entry values that baton_dequeue returns.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "baton/status.h"
#include "baton/task.h"
#include "broker/redis_connection.h"

namespace baton::internal {

// The 10 per-task ARGV values of baton_enqueue, in order: id, payload, max_retry, delay_seconds,
// created_at, execution_timeout ("" if none), extra ("" if empty object), run_at_ms (0 = now +
// delay), unique_key ("" if none), unique_ttl_s.
std::vector<std::string> EncodeEnqueueArgs(const Task& task, std::int64_t run_at_ms,
                                           const std::string& unique_key,
                                           std::int64_t unique_ttl_s);

// One task delivered by baton_dequeue.
struct DeliveredTask {
  std::string stream_id;
  Task task;
  int attempt = 1;  // this run: 1 on the first delivery
};

// Decodes entry number `index` (0-based) of a baton_dequeue `entries` array (9 values per entry:
// SID, id, payload, max_retry, delay_seconds, created_at, execution_timeout, extra, attempt).
// On failure returns kInvalidArgument naming the field (e.g. "payload: must be a JSON object"),
// and still fills `stream_id_out` / `task_id_out` so the caller can fail the entry as malformed.
StatusOr<DeliveredTask> DecodeDequeuedEntry(std::string_view ns, std::string_view type,
                                            const Reply& entries, std::size_t index,
                                            std::string* stream_id_out, std::string* task_id_out);

}  // namespace baton::internal
