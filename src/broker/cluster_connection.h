#pragma once
// A connection to a Redis Cluster: the slot map, one RedisNode per primary (opened on first use),
// and the routing of every command to the primary that serves its key. A pipeline is split by
// node and sent to all of them before any reply is read; MOVED, ASK, TRYAGAIN and CLUSTERDOWN
// replies are handled here (slot map refresh, bounded retries), so the caller sees the replies a
// single Redis would give. Replicas are never written. Not thread-safe.
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "baton/status.h"
#include "broker/cluster_topology.h"
#include "broker/redis_endpoint.h"
#include "broker/redis_node.h"
#include "broker/redis_reply.h"

namespace baton::internal {

class ClusterConnection {
 public:
  // Reads the slot map from the first seed of `endpoint` that answers. Errors: kUnavailable (no
  // seed answers, or a slot is not served), kInvalidArgument (a seed is not a cluster node).
  static StatusOr<std::unique_ptr<ClusterConnection>> Open(const RedisEndpoint& endpoint,
                                                           std::chrono::milliseconds timeout);

  // Runs `commands` as one pipeline per node and returns their replies in order. Routing: a
  // command goes to the primary of its key (CommandKey); a keyless one (MULTI, EXEC, WAIT, TIME,
  // CLIENT...) follows the keyed command before it in the pipeline (else the one after it), so a
  // transaction or a WAIT stays on its node; a pipeline with no key at all goes to the primary of
  // `route_key`, or to the first primary. `block` as RedisNode::Flush. An I/O failure on any
  // node: kUnavailable, and broken() until Reconnect().
  StatusOr<std::vector<Reply>> Run(const std::vector<std::vector<std::string>>& commands,
                                   std::optional<std::string_view> route_key,
                                   std::chrono::milliseconds block);
  // Sends one command to one primary ("host:port" as Primaries() names it).
  StatusOr<Reply> RunOnNode(const std::string& node, const std::vector<std::string>& argv);

  // Drops the broken node connections and reads the slot map again.
  Status Reconnect();
  bool broken() const { return !broken_reason_.empty(); }
  // The primaries that serve slots, as of the last slot map read.
  std::vector<std::string> Primaries() const;

 private:
  struct Unit;
  ClusterConnection(RedisEndpoint endpoint, std::chrono::milliseconds timeout)
      : endpoint_(std::move(endpoint)), timeout_(timeout) {}
  Status RefreshSlotMap();
  StatusOr<SlotMap> ReadSlotMap(RedisNode& node, const NodeAddress& address);
  StatusOr<RedisNode*> NodeAt(const NodeAddress& address);
  Status Broken(Status status);

  RedisEndpoint endpoint_;
  std::chrono::milliseconds timeout_;
  SlotMap slots_;
  std::map<std::string, std::unique_ptr<RedisNode>> nodes_;  // by NodeAddress::ToString()
  std::string broken_reason_;
};

}  // namespace baton::internal
