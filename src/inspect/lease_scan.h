#pragma once
// Leases of one (namespace, task type) as the inspector reads them: baton:v2:{ns}:leases:TYPE maps
// each delivered task id to its lease deadline (Unix ms, server clock), moved by heartbeats
// (baton_v2_extend). A deadline in the past is an expired lease that no reaper has taken back yet.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "baton/status.h"
#include "core/keys.h"
#include "inspect/inspector_core.h"

namespace baton::internal {

struct ExpiredLease {
  std::string id;
  std::string sid;  // the stream entry of its queued record ("" when the record is not queued)
  std::int64_t deadline_ms = 0;
};

struct ExpiredLeases {
  std::int64_t total = 0;            // every lease whose deadline is before now
  std::vector<ExpiredLease> leases;  // the earliest `limit` of them, earliest first
  std::set<std::string> sids;        // their stream entries
};

// The leases of (ns, type) that expired before `now_ms`.
StatusOr<ExpiredLeases> ReadExpiredLeases(InspectorCore& core, const Keys& keys,
                                          const std::string& type, std::int64_t now_ms,
                                          std::size_t limit);

}  // namespace baton::internal
