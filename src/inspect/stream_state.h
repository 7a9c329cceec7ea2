#pragma once
// A snapshot of one work stream and its consumer groups (XINFO STREAM / GROUPS / CONSUMERS), the
// raw material of ListQueues, Pending, the doctor and the rescue, and bounded counts of stream and
// PEL ranges.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "baton/inspector.h"
#include "baton/status.h"
#include "inspect/inspector_core.h"

namespace baton::internal {

struct StreamState {
  bool exists = false;
  std::int64_t length = 0;
  std::string last_generated_id = "0-0";  // the last id ever added (even if deleted since)
  std::int64_t entries_added = 0;
  std::string first_entry_id;     // "" when empty
  std::string last_entry_id;      // "" when empty
  std::vector<GroupInfo> groups;  // with their consumers, by name

  const GroupInfo* FindGroup(const std::string& name) const;
};

// Reads the snapshot in two round trips (stream + groups, then every group's consumers), plus,
// with `count_ready`, the reads that count each group's ready entries (CountReady). A consumer is
// live when its idle time is below InspectorOptions::live_consumer_window. A missing stream gives
// exists = false.
StatusOr<StreamState> ReadStreamState(InspectorCore& core, const std::string& stream_key,
                                      bool count_ready);

struct RangeCount {
  std::int64_t count = 0;
  bool exact = true;  // false when the walk stopped at the limit
};

// Walks a ranged read in chunks of up to 1000: `make(start, count)` builds the command (XRANGE or
// XPENDING, whose replies are arrays whose elements start with the entry id); stops at `limit`.
// `ids`, when given, receives the ids read.
template <typename Make>
StatusOr<RangeCount> CountRange(InspectorCore& core, std::string start, std::size_t limit,
                                Make make, std::vector<std::string>* ids = nullptr) {
  constexpr std::size_t kChunk = 1000;
  RangeCount out;
  while (static_cast<std::size_t>(out.count) < limit) {
    std::size_t count = std::min(kChunk, limit - static_cast<std::size_t>(out.count));
    auto reply = core.Call(make(start, count));
    if (!reply.ok()) return reply.status();
    out.count += static_cast<std::int64_t>(reply->elements.size());
    if (ids != nullptr) {
      for (const Reply& e : reply->elements) ids->push_back(e.elements[0].AsString());
    }
    if (reply->elements.size() < count) return out;
    start = "(" + reply->elements.back().elements[0].AsString();
  }
  out.exact = false;
  return out;
}

// Stream entries between `start` and `end` (XRANGE bounds: "-", "+", "ID", "(ID"), up to `limit`.
StatusOr<RangeCount> CountEntries(InspectorCore& core, const std::string& stream,
                                  const std::string& start, const std::string& end,
                                  std::size_t limit);

// The entries of the stream after `group`'s last-delivered-id: what the group has yet to deliver.
// Counted from the stream (XINFO GROUPS' lag is wrong in Redis 7.0 after deletions): 0 or the
// whole length when the position is past the last entry or before the first, otherwise the length
// minus the entries at or before the position (usually few: the pending ones), or, when those are
// more than entry_scan_limit, the entries after it counted directly.
StatusOr<RangeCount> CountReady(InspectorCore& core, const std::string& stream,
                                const StreamState& state, const GroupInfo& group);

}  // namespace baton::internal
