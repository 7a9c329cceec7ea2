#pragma once
// Partitions: one namespace spread over several Redis Cluster slots (docs/cluster.md,
// "Partitions"). HGET baton:v2:partitions NS gives the partition count P (absent: 1). Partition 0
// is NS itself; partition p >= 1 has the keys of the storage namespace "NS:p". A task goes to
// partition fnv1a32(task_id) mod P, the same rule in every language
// (contract/fixtures/partitions.json), so an id enqueued twice meets itself.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "baton/status.h"
#include "broker/protocol_gen.h"
#include "broker/redis_connection.h"

namespace baton::internal {

// From contract/protocol.json (global_keys.partitions).
inline constexpr std::string_view kPartitionsKey = protocol::kGlobalPartitions;
inline constexpr int kMaxPartitions = 1024;
// How old a cached partition count may get before it is read again (protocol.json
// "refresh_seconds").
inline constexpr std::chrono::seconds kPartitionRefresh{5};

// FNV-1a, 32 bits, over the bytes of `text`.
std::uint32_t Fnv1a32(std::string_view text);
// The partition (0..count-1) of a task id; count >= 1.
int PartitionOf(std::string_view task_id, int count);
// The storage namespace of partition `partition` of `ns`: ns itself for 0, "ns:p" otherwise.
std::string PartitionNamespace(std::string_view ns, int partition);
// A namespace name, or a partition "NS:p" of one (p 1..kMaxPartitions-1, no leading zero): what
// may stand between the braces of a key.
bool IsValidStorageNamespace(std::string_view name);
// The namespace a storage namespace belongs to: "shop" for "shop:3" and for "shop".
std::string_view BaseNamespace(std::string_view storage_ns);
// The partition number of a storage namespace: 3 for "shop:3", 0 for "shop".
int PartitionNumber(std::string_view storage_ns);

// A partition count as stored: nil, or text other than ASCII digits worth at least 1: 1; digits
// worth more than kMaxPartitions (however many): kMaxPartitions. The "counts" of
// contract/fixtures/partitions.json are the shared vectors.
int ParsePartitionCount(const Reply& reply);

// The partition counts of `namespaces` (one HMGET), in that order.
StatusOr<std::vector<int>> ReadPartitionCounts(RedisConnection& conn,
                                               const std::vector<std::string>& namespaces);

// Partition counts read through a connection, each kept up to kPartitionRefresh. Not
// thread-safe.
class PartitionCounts {
 public:
  using Clock = std::chrono::steady_clock;
  // Makes Count() current for every namespace in `namespaces`: reads the ones never read or read
  // longer than kPartitionRefresh ago, in one HMGET (no command when none is stale).
  Status Refresh(RedisConnection& conn, const std::vector<std::string>& namespaces,
                 Clock::time_point now = Clock::now());
  // Reads the count of `ns` now, whatever the age of the copy: for the rare calls that must see a
  // count grown a moment ago (cancel searches, configure writes every partition).
  Status ReadNow(RedisConnection& conn, const std::string& ns,
                 Clock::time_point now = Clock::now());
  // The count last read for `ns` (1 when never read).
  int Count(const std::string& ns) const;
  // Records a count this process has just written (it counts as freshly read).
  void Set(const std::string& ns, int count, Clock::time_point now = Clock::now()) {
    entries_[ns] = {count, now};
  }

 private:
  struct Entry {
    int count = 1;
    Clock::time_point read_at;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace baton::internal
