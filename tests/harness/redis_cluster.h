#pragma once
// A real Redis Cluster for one test: `primaries` redis-server processes serving the 16384 slots,
// each with `replicas` replicas, on free loopback ports, made with `redis-cli --cluster create`.
// Stopped and deleted when the object dies. Node timeout 1 s, so a failover takes a few seconds.
#include <memory>
#include <string>
#include <vector>

#include "harness/redis_server.h"

namespace baton::testing {

class RedisCluster {
 public:
  // Starts the nodes, creates the cluster and waits until every node says cluster_state:ok and
  // every replica is in sync. `extra_args` go to every redis-server.
  explicit RedisCluster(int primaries = 3, int replicas = 1,
                        std::vector<std::string> extra_args = {});

  // redis+cluster://127.0.0.1:p1,127.0.0.1:p2,... with the primaries as seeds.
  std::string url() const;
  int size() const { return static_cast<int>(nodes_.size()); }
  RedisServer& node(int index) { return *nodes_.at(static_cast<std::size_t>(index)); }
  // Indexes of the nodes that serve slots now / replicate one, as CLUSTER NODES says.
  std::vector<int> Primaries();
  std::vector<int> Replicas();
  // The index of the primary that serves `key`'s slot now.
  int PrimaryFor(const std::string& key);
  // FUNCTION LOAD REPLACE of the Baton library on every primary.
  void LoadFunctions();
  // SIGKILLs node `index` and waits (up to `timeout_s`) until a replica serves its slots and every
  // live node says cluster_state:ok.
  void KillAndWaitForFailover(int index, int timeout_s = 30);
  // Waits until every live node says cluster_state:ok (throws after `timeout_s`).
  void WaitHealthy(int timeout_s = 30);

 private:
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<bool> killed_;
};

}  // namespace baton::testing
