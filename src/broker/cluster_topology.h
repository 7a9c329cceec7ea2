#pragma once
// The slot map of a Redis Cluster: which primary serves each of the 16384 slots, read from
// CLUSTER SHARDS (Redis 7) or CLUSTER SLOTS (older servers). Replicas are not kept: Baton reads
// and writes on primaries only.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "baton/status.h"
#include "broker/cluster_slot.h"
#include "broker/redis_connection.h"

namespace baton::internal {

struct NodeAddress {
  std::string host;
  int port = 0;
  // "host:port", "[v6]:port" for an IPv6 host.
  std::string ToString() const;
  bool operator==(const NodeAddress&) const = default;
};

// "host:port" or "[v6]:port" as MOVED/ASK replies name a node. Errors: kInvalidArgument.
StatusOr<NodeAddress> ParseNodeAddress(std::string_view text);

class SlotMap {
 public:
  // The primary serving `slot`, or nullptr when no primary does.
  const NodeAddress* Owner(int slot) const;
  // Every primary that serves at least one slot, in the order first seen.
  const std::vector<NodeAddress>& primaries() const { return primaries_; }
  // Slots [first, last] are served by `node` from now on.
  void Assign(int first, int last, const NodeAddress& node);
  // Number of slots that no primary serves.
  int unserved() const;

 private:
  std::vector<NodeAddress> primaries_;
  std::vector<int16_t> owner_ = std::vector<int16_t>(kClusterSlots, -1);
};

// Parses a CLUSTER SHARDS reply (RESP2: each shard a flat array "slots" [start end ...] "nodes"
// [node...], each node a flat array of field/value pairs). A node's address is its "endpoint"
// (or "ip" when the endpoint is empty or "?") and "port"; `asked` stands in for a node that
// reports no address. Errors: kInternal naming what is malformed.
StatusOr<SlotMap> SlotMapFromShards(const Reply& reply, const NodeAddress& asked);
// Parses a CLUSTER SLOTS reply: [[start, end, [host, port, id...], replicas...]...].
StatusOr<SlotMap> SlotMapFromSlots(const Reply& reply, const NodeAddress& asked);

}  // namespace baton::internal
