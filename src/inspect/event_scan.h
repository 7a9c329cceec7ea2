#pragma once
// Bounded reads of a namespace's events stream (baton:{ns}:events): one task's timeline and the
// per-type rates of the last minute. Both walk the stream backwards from the newest event in
// chunks, and stop at a limit, so they cost the same on a busy namespace as on a quiet one.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "baton/inspector.h"
#include "baton/status.h"
#include "inspect/inspector_core.h"

namespace baton::internal {

struct TaskTimeline {
  std::vector<TaskEvent> events;  // oldest first
  bool complete = false;          // the task's first event (from "new") was reached
};

// The events of task `id`, newest back to the task's first event, to `oldest_ms` (events before it
// cannot be the task's; 0 = no bound) or to `limit` events read, whichever comes first.
StatusOr<TaskTimeline> ScanTaskEvents(InspectorCore& core, const std::string& events_key,
                                      const std::string& id, std::int64_t oldest_ms,
                                      std::size_t limit);

struct RateSample {
  std::map<std::string, QueueRates> by_type;
  bool exact = true;  // false when `limit` events did not reach back a whole minute

  // The rates of `type` (zero counts when it had no events).
  QueueRates For(const std::string& type) const;
};

// Counts per task type of the events in the minute before `now_ms` (see QueueRates).
StatusOr<RateSample> MeasureRates(InspectorCore& core, const std::string& events_key,
                                  std::int64_t now_ms, std::size_t limit);

}  // namespace baton::internal
