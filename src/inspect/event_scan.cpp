#include "inspect/event_scan.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "inspect/stream_id.h"
#include "inspect/utf8_text.h"

namespace baton::internal {

namespace {

constexpr std::size_t kChunk = 1000;
constexpr std::int64_t kRateWindowMs = 60000;

// The fields of one events entry, viewed in the reply (no copies).
struct EntryView {
  std::string_view event_id;
  std::string_view type;
  std::string_view from;
  std::string_view to;
  std::string_view worker;
  std::string_view ids;
  std::string_view attempts;
  std::string_view error;
};

bool ViewEntry(const Reply& entry, EntryView* out) {
  if (!entry.is_array() || entry.elements.size() < 2) return false;
  out->event_id = entry.elements[0].str;
  const auto& fv = entry.elements[1].elements;
  for (std::size_t i = 0; i + 1 < fv.size(); i += 2) {
    const std::string& name = fv[i].str;
    std::string_view value = fv[i + 1].str;
    if (name == "type") {
      out->type = value;
    } else if (name == "from") {
      out->from = value;
    } else if (name == "to") {
      out->to = value;
    } else if (name == "worker") {
      out->worker = value;
    } else if (name == "ids") {
      out->ids = value;
    } else if (name == "attempts") {
      out->attempts = value;
    } else if (name == "error") {
      out->error = value;
    }
  }
  return true;
}

int ToInt(std::string_view text) {
  int n = 0;
  std::from_chars(text.data(), text.data() + text.size(), n);
  return n;
}

// Calls `visit(entry)` for events from `end` (newest) back to `start` (inclusive), `limit` at most.
// `visit` returns false to stop. Returns the number read and whether the walk reached `start` (or
// the beginning of the stream) on its own.
template <typename Visit>
StatusOr<std::pair<std::size_t, bool>> WalkBackwards(InspectorCore& core, const std::string& key,
                                                     std::string end, const std::string& start,
                                                     std::size_t limit, Visit visit) {
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

std::optional<std::size_t> IdPosition(std::string_view ids, std::string_view id) {
  if (id.empty()) return std::nullopt;
  std::size_t index = 0;
  std::size_t start = 0;
  while (start <= ids.size()) {
    std::size_t end = ids.find(' ', start);
    if (end == std::string_view::npos) end = ids.size();
    if (ids.substr(start, end - start) == id) return index;
    ++index;
    start = end + 1;
  }
  return std::nullopt;
}

std::string_view WordAt(std::string_view list, std::size_t index) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < index; ++i) {
    std::size_t space = list.find(' ', start);
    if (space == std::string_view::npos) return {};
    start = space + 1;
  }
  std::size_t end = list.find(' ', start);
  return list.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

std::size_t WordCount(std::string_view list) {
  if (list.empty()) return 0;
  return static_cast<std::size_t>(std::count(list.begin(), list.end(), ' ')) + 1;
}

StatusOr<TaskTimeline> ScanTaskEvents(InspectorCore& core, const std::string& events_key,
                                      const std::string& id, EventWindow window,
                                      std::size_t limit) {
  TaskTimeline timeline;
  std::string start = window.oldest_ms > 0 ? std::to_string(window.oldest_ms) + "-0" : "-";
  std::string end = window.newest_ms > 0 ? std::to_string(window.newest_ms) : "+";
  bool found_first = false;
  auto walked = WalkBackwards(core, events_key, end, start, limit, [&](const Reply& entry) {
    EntryView v;
    if (!ViewEntry(entry, &v)) return true;
    // Cheap test first: most entries do not mention the id at all.
    if (v.ids.find(id) == std::string_view::npos) return true;
    std::optional<std::size_t> at = IdPosition(v.ids, id);
    if (!at) return true;
    TaskEvent event;
    event.event_id = std::string(v.event_id);
    event.at_ms = StreamIdMs(v.event_id);
    event.from = std::string(v.from);
    event.to = std::string(v.to);
    event.attempt = ToInt(WordAt(v.attempts, *at));
    event.worker = ValidUtf8(v.worker);
    event.error = ValidUtf8(v.error);  // a worker's stderr: any bytes
    if (timeline.type.empty()) timeline.type = std::string(v.type);
    found_first = event.from == "new";
    timeline.events.push_back(std::move(event));
    return !found_first;
  });
  if (!walked.ok()) return walked.status();
  std::reverse(timeline.events.begin(), timeline.events.end());
  // Reaching the time bound counts as complete: nothing older can belong to the task.
  timeline.complete = found_first || (walked->second && window.oldest_ms > 0);
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
  auto walked = WalkBackwards(core, events_key, "+", std::to_string(since) + "-0", limit,
                              [&](const Reply& entry) {
                                EntryView v;
                                if (!ViewEntry(entry, &v)) return true;
                                oldest_seen = StreamIdMs(v.event_id);
                                const auto n = static_cast<std::int64_t>(WordCount(v.ids));
                                QueueRates& r = rates[std::string(v.type)];
                                if (v.to == "done") r.done += n;
                                if (v.to == "retry" || v.to == "dead") r.failed += n;
                                if (v.to == "queued") r.queued += n;
                                if (v.from == "queued" && v.to == "active") r.started += n;
                                if (v.to == "dropped") r.dropped += n;
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
      r.dropped = std::llround(r.dropped * scale);
    }
  }
  return sample;
}

}  // namespace baton::internal
