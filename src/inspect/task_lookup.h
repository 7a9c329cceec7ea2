#pragma once
// Finding one task: its live record or final state, body, errors, where it sits (stream entry,
// PEL holders and lease deadline, scheduled due time, dead-letter time) and optionally its events.
// GetTask and the doctor share it.
#include <optional>
#include <string>

#include "baton/inspector.h"
#include "baton/status.h"
#include "inspect/inspector_core.h"
#include "inspect/stream_state.h"
#include "inspect/task_record.h"

namespace baton::internal {

struct TaskLookup {
  TaskInfo info;
  std::optional<TaskRecord> record;  // the live record, when there is one
  bool entry_missing = false;        // queued, but the record's stream entry does not exist
  StreamState stream;                // queued / active: the work stream and its groups
};

// kNotFound (the message says why it might be missing) when there is neither a live record nor a
// final state; kInternal when the record is not in the documented format. A done task's events are
// always read (its type, attempts and worker live only there), `with_events` or not.
StatusOr<TaskLookup> LookupTask(InspectorCore& core, const std::string& ns, const std::string& id,
                                bool with_events);

}  // namespace baton::internal
