#pragma once
// Reading and growing the partition count of a namespace (docs/cluster.md, "Partitions"): what
// Client::Partitions and Client::SetPartitions do, on the client's connection.
#include <string>

#include "baton/status.h"
#include "broker/redis_connection.h"

namespace baton::internal {

// The namespace's partition count (1 when it was never partitioned).
StatusOr<int> ReadPartitionCount(RedisConnection& conn, const std::string& ns);

// Makes `ns` have `count` partitions (1..kMaxPartitions): copies partition 0's settings to every
// partition it adds (which also proves the functions library on their primaries accepts
// partitions), then raises the count with a compare-and-set. A count below the current one is
// refused (kFailedPrecondition): tasks in the dropped partitions would wait with nobody to serve
// them. Returns the count in effect afterwards.
StatusOr<int> GrowPartitions(RedisConnection& conn, const std::string& ns, int count);

}  // namespace baton::internal
