#pragma once
// Converts between a Task and the wire form of the functions library (docs/protocol.md): the
// per-task ARGV of baton_enqueue, the per-entry values that baton_dequeue returns, and a work
// stream entry as XREADGROUP returns it (the fast read path).
#include <cstdint>
#include <optional>
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

// The `task` field of a work stream entry, split at its first six '|':
// "ID|MAX_RETRY|DELAY_SECONDS|CREATED_AT|EXECUTION_TIMEOUT|ATTEMPT|EXTRA" (EXTRA is last because it
// may contain '|'). The parts are text as written, unchecked; nullopt when there are fewer than six
// '|' (a foreign or malformed entry). They are views into `task` (split on the worker's hot path:
// no copies), valid while its text lives.
struct EntryTask {
  std::string_view id;
  std::string_view max_retry;
  std::string_view delay_seconds;
  std::string_view created_at;
  std::string_view execution_timeout;
  std::string_view attempt;
  std::string_view extra;
};
std::optional<EntryTask> ParseEntryTask(std::string_view task);

// Decodes one work stream entry read with XREADGROUP: `fields` is its flat field/value array
// (task, payload). On failure returns kInvalidArgument naming what is wrong, and still fills
// `task_id_out` / `attempt_out` with the task field's id and ATTEMPT when it splits ("" when it
// does not): what baton_v2_start takes for the entry.
StatusOr<DeliveredTask> DecodeStreamEntry(std::string_view ns, std::string_view type,
                                          std::string_view stream_id, const Reply& fields,
                                          std::string* task_id_out, std::string* attempt_out);

}  // namespace baton::internal
