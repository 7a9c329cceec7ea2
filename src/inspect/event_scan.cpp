#include "inspect/event_scan.h"

#include <algorithm>
#include <cmath>

#include "inspect/stream_id.h"

namespace baton::internal {

namespace {

constexpr std::size_t kChunk = 1000;
constexpr std::int64_t kRateWindowMs = 60000;

TaskEvent ParseEvent(const Reply& entry) {
  TaskEvent event;
  if (!entry.is_array() || entry.elements.size() < 2) return event;
  event.event_id = entry.elements[0].AsString();
  event.at_ms = StreamIdMs(event.event_id);
  auto fields = FieldMap(entry.elements[1]);
  event.from = FieldText(fields, "from");
  event.to = FieldText(fields, "to");
  event.attempt = static_cast<int>(FieldInt(fields, "attempt"));
  event.worker = FieldText(fields, "worker");
  event.error = FieldText(fields, "error");
  return event;
}

// Calls `visit(entry)` for events from newest to `start` (inclusive), `limit` at most. `visit`
// returns false to stop. Returns the number read and whether the walk reached `start` (or the
// beginning of the stream) on its own.
template <typename Visit>
StatusOr<std::pair<std::size_t, bool>> WalkBackwards(InspectorCore& core, const std::string& key,
                                                     const std::string& start, std::size_t limit,
                                                     Visit visit) {
  std::string end = "+";
  std::size_t read = 0;
  while (read < limit) {
    std::size_t count = std::min(kChunk, limit - read);
    auto reply = core.Call({"XREVRANGE", key, end, start, "COUNT", std::to_string(count)});
    if (!reply.ok()) return reply.status();
    const auto& entries = reply->elements;
    for (const Reply& entry : entries) {
      ++read;
      if (!visit(entry)) return std::make_pair(read, false);
    }
    if (entries.size() < count) return std::make_pair(read, true);
    end = "(" + entries.back().elements[0].AsString();
  }
  return std::make_pair(read, false);
}

}  // namespace

StatusOr<TaskTimeline> ScanTaskEvents(InspectorCore& core, const std::string& events_key,
                                      const std::string& id, std::int64_t oldest_ms,
                                      std::size_t limit) {
  TaskTimeline timeline;
  std::string start = oldest_ms > 0 ? std::to_string(oldest_ms) + "-0" : "-";
  bool found_first = false;
  auto walked = WalkBackwards(core, events_key, start, limit, [&](const Reply& entry) {
    if (entry.elements.size() < 2) return true;
    const Reply& fv = entry.elements[1];
    // The id is the first field of every event: check it before parsing the rest.
    if (fv.elements.size() < 2 || (fv.elements[0].str == "id" && fv.elements[1].str != id)) {
      return true;
    }
    if (FieldText(FieldMap(fv), "id") != id) return true;
    TaskEvent event = ParseEvent(entry);
    found_first = event.from == "new";
    timeline.events.push_back(std::move(event));
    return !found_first;
  });
  if (!walked.ok()) return walked.status();
  std::reverse(timeline.events.begin(), timeline.events.end());
  // Reaching the time bound counts as complete: nothing older can belong to the task.
  timeline.complete = found_first || (walked->second && oldest_ms > 0);
  return timeline;
}

QueueRates RateSample::For(const std::string& type) const {
  auto it = by_type.find(type);
  QueueRates r = it == by_type.end() ? QueueRates{} : it->second;
  r.exact = exact;
  return r;
}

StatusOr<RateSample> MeasureRates(InspectorCore& core, const std::string& events_key,
                                  std::int64_t now_ms, std::size_t limit) {
  RateSample sample;
  auto& rates = sample.by_type;
  std::int64_t since = now_ms - kRateWindowMs;
  std::int64_t oldest_seen = now_ms;
  auto walked =
      WalkBackwards(core, events_key, std::to_string(since) + "-0", limit, [&](const Reply& entry) {
        TaskEvent event = ParseEvent(entry);
        oldest_seen = event.at_ms;
        auto fields = FieldMap(entry.elements[1]);
        QueueRates& r = rates[FieldText(fields, "type")];
        if (event.to == "done") ++r.done;
        if (event.to == "retry" || event.to == "dead") ++r.failed;
        if (event.to == "queued") ++r.queued;
        if (event.from == "queued" && event.to == "active") ++r.started;
        return true;
      });
  if (!walked.ok()) return walked.status();
  if (!walked->second) {
    // More events than the limit in the minute: scale the newest ones up to the whole window.
    std::int64_t covered = std::max<std::int64_t>(1, now_ms - oldest_seen);
    double scale = static_cast<double>(kRateWindowMs) / static_cast<double>(covered);
    sample.exact = false;
    for (auto& [type, r] : rates) {
      r.done = std::llround(r.done * scale);
      r.failed = std::llround(r.failed * scale);
      r.queued = std::llround(r.queued * scale);
      r.started = std::llround(r.started * scale);
    }
  }
  return sample;
}

}  // namespace baton::internal
