#pragma once
// A snapshot of one work stream and its consumer groups (XINFO STREAM / GROUPS / CONSUMERS), the
// raw material of ListQueues, Pending, the doctor and the rescue.
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
  std::vector<GroupInfo> groups;  // with their consumers, by name

  const GroupInfo* FindGroup(const std::string& name) const;
};

// Reads the snapshot in two round trips (stream + groups, then every group's consumers). A
// consumer is live when its idle time is below `live_window_ms`. Each group's `ready` is its lag,
// or length - pending when Redis reports no lag. A missing stream gives exists = false.
StatusOr<StreamState> ReadStreamState(InspectorCore& core, const std::string& stream_key,
                                      std::int64_t live_window_ms);

}  // namespace baton::internal
