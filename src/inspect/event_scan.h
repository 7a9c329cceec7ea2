#pragma once
// Bounded reads of a namespace's events stream (baton:v2:{ns}:events): one task's timeline and the
// per-type rates of the last minute. Both walk the stream backwards from the newest event in
// chunks, and stop at a limit, so they cost the same on a busy namespace as on a quiet one.
//
// An events entry records one transition of one call: fields type, from, to, worker, ids,
// attempts, error, where ids and attempts are space-separated parallel lists (a batch of tasks
// shares one entry; a failure has one id and its error).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "baton/inspector.h"
#include "baton/status.h"
#include "inspect/inspector_core.h"

namespace baton::internal {

// The position of task `id` in an entry's space-separated `ids` list, or nullopt.
std::optional<std::size_t> IdPosition(std::string_view ids, std::string_view id);
// The `index`-th word of a space-separated list ("" when there is none).
std::string_view WordAt(std::string_view list, std::size_t index);
// The number of words of a space-separated list.
std::size_t WordCount(std::string_view list);

struct TaskTimeline {
  std::vector<TaskEvent> events;  // oldest first
  std::string type;               // the task type the entries name ("" when none was found)
  bool complete = false;          // the task's first event (from "new") was reached
};

// Bounds of a task's event walk, Unix ms (0 = open).
struct EventWindow {
  std::int64_t oldest_ms = 0;  // events before it cannot be the task's (its creation)
  std::int64_t newest_ms = 0;  // events after it cannot be the task's (it finished)
};

// The events of task `id`, from `window.newest_ms` (or the newest event) back to the task's first
// event, to `window.oldest_ms`, or to `limit` entries read, whichever comes first.
StatusOr<TaskTimeline> ScanTaskEvents(InspectorCore& core, const std::string& events_key,
                                      const std::string& id, EventWindow window, std::size_t limit);

struct RateSample {
  std::map<std::string, QueueRates> by_type;
  bool exact = true;  // false when `limit` entries did not reach back a whole minute

  // The rates of `type` (zero counts when it had no events).
  QueueRates For(const std::string& type) const;
};

// Counts per task type of the tasks in the events of the minute before `now_ms` (see
// QueueRates): an entry counts once per id it lists.
StatusOr<RateSample> MeasureRates(InspectorCore& core, const std::string& events_key,
                                  std::int64_t now_ms, std::size_t limit);

}  // namespace baton::internal
