#pragma once
// Leases of one (namespace, task type) as the inspector reads them (docs/keyspace.md). Nothing is
// stored per task: a delivered task's lease ends at its delivery time in the consumer group's
// pending entries list (reset by each heartbeat, baton_v2_extend) plus the lease length its
// consumer asked for, kept in baton:v2:{ns}:leases:TYPE (a HASH consumer -> lease_ms; the
// namespace's lease_ms setting when the consumer stored none). With XPENDING's idle time:
//   lease end = now - idle + lease length of the consumer.
// A lease that ended is expired until a reaper (baton_v2_reclaim) takes the task back.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "baton/status.h"
#include "broker/keys.h"
#include "broker/protocol_gen.h"
#include "inspect/inspector_core.h"
#include "inspect/stream_state.h"

namespace baton::internal {

// The lease lengths of (ns, type), the way baton_v2_reclaim resolves them.
struct LeaseLengths {
  std::map<std::string, std::int64_t> by_consumer;      // the valid values of leases:TYPE
  std::int64_t default_ms = protocol::kDefaultLeaseMs;  // the namespace's lease_ms setting

  std::int64_t For(const std::string& consumer) const;
  // When a pending entry of `consumer`, idle for `idle_ms` at `now_ms`, stops being leased.
  std::int64_t EndMs(const std::string& consumer, std::int64_t idle_ms, std::int64_t now_ms) const {
    return now_ms - idle_ms + For(consumer);
  }
};

// HGETALL leases:TYPE and the namespace's lease_ms (HGET config), in one round trip. Values out
// of the functions' range (1000..86400000, e.g. written by hand) are ignored, as the functions do.
StatusOr<LeaseLengths> ReadLeaseLengths(InspectorCore& core, const Keys& keys,
                                        const std::string& type);
// The same from the replies of HGETALL leases:TYPE and HGET config lease_ms.
LeaseLengths ParseLeaseLengths(const Reply& hgetall, const Reply& default_lease);

struct ExpiredLease {
  std::string id;  // from its stream entry; "" when the entry is gone (reclaim just acks it)
  std::string sid;
  std::string group;
  std::string consumer;
  std::int64_t deadline_ms = 0;  // when the lease ended
};

struct ExpiredLeases {
  std::int64_t total = 0;  // pending entries whose lease ended by now
  // False when the walk of the pending entries stopped at InspectorOptions::entry_scan_limit
  // (total is then a lower bound).
  bool exact = true;
  std::vector<ExpiredLease> leases;  // the earliest `limit` of them, earliest first
  LeaseLengths lengths;              // as read for the scan (not read when nothing is pending)
};

// The pending entries of every group of the stream (`state`, from ReadStreamState) whose lease
// ended at or before `now_ms` (idle >= the consumer's lease length: what baton_v2_reclaim takes),
// read with XPENDING ... IDLE per consumer that holds entries.
StatusOr<ExpiredLeases> ReadExpiredLeases(InspectorCore& core, const Keys& keys,
                                          const std::string& type, const StreamState& state,
                                          std::int64_t now_ms, std::size_t limit);

}  // namespace baton::internal
