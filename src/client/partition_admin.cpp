#include "client/partition_admin.h"

#include <string>
#include <vector>

#include "broker/functions.h"
#include "broker/keys.h"
#include "broker/partitions.h"

namespace baton::internal {
namespace {

Status FirstError(const std::vector<Reply>& replies) {
  for (const Reply& r : replies) {
    if (r.is_error()) return StatusFromErrorReply(r);
  }
  return Status::Ok();
}

// Partition 0's stored settings (only those set: absent ones take the defaults everywhere) as
// baton_v2_configure pairs.
StatusOr<std::vector<std::pair<std::string, std::string>>> StoredSettings(RedisConnection& conn,
                                                                          const std::string& ns) {
  StatusOr<Reply> stored = conn.Command({"HGETALL", Keys(ns).Config()});
  if (!stored.ok()) return stored.status();
  if (stored->is_error()) return StatusFromErrorReply(*stored);
  std::vector<std::pair<std::string, std::string>> pairs;
  for (std::size_t i = 0; i + 1 < stored->elements.size(); i += 2) {
    pairs.emplace_back(stored->elements[i].AsString(), stored->elements[i + 1].AsString());
  }
  return pairs;
}

}  // namespace

StatusOr<int> ReadPartitionCount(RedisConnection& conn, const std::string& ns) {
  StatusOr<std::vector<int>> counts = ReadPartitionCounts(conn, {ns});
  if (!counts.ok()) return counts.status();
  return counts->front();
}

StatusOr<int> GrowPartitions(RedisConnection& conn, const std::string& ns, int count) {
  if (count < 1 || count > kMaxPartitions) {
    return Status::InvalidArgument("count", "must be 1.." + std::to_string(kMaxPartitions) +
                                                " (got " + std::to_string(count) + ")");
  }
  StatusOr<int> current = ReadPartitionCount(conn, ns);
  if (!current.ok()) return current.status();
  if (count < *current) {
    return Status::InvalidArgument(
        "count", "must not be below the current " + std::to_string(*current) +
                     ": partitions only grow (tasks in a dropped partition would wait with "
                     "nobody to serve them)");
  }
  if (count == *current) return count;

  // The new partitions get partition 0's settings first, so that no task ever runs there under
  // other settings. Each call goes to its partition's primary; a library that predates
  // partitions refuses the key, and then nothing is counted yet.
  auto settings = StoredSettings(conn, ns);
  if (!settings.ok()) return settings.status();
  for (int p = *current; p < count; ++p)
    conn.Append(fn::Configure(PartitionNamespace(ns, p), *settings));
  StatusOr<std::vector<Reply>> configured = conn.Flush();
  if (!configured.ok()) return configured.status();
  if (Status s = FirstError(*configured); !s.ok()) {
    if (s.code() == StatusCode::kInvalidArgument && s.message().starts_with("KEYS[1]")) {
      return Status(StatusCode::kVersionMismatch,
                    "the functions library in Redis does not know partitions (" + s.message() +
                        "): run 'baton init' to load the current one");
    }
    return s;
  }

  // Compare-and-set, so that two concurrent growers never lower each other's count.
  const std::string key(kPartitionsKey);
  for (int tries = 0; tries < 5; ++tries) {
    conn.Append({"WATCH", key});
    conn.Append({"HGET", key, ns});
    StatusOr<std::vector<Reply>> read = conn.Flush();
    if (!read.ok()) return read.status();
    if (Status s = FirstError(*read); !s.ok()) return s;
    const int now = ParsePartitionCount((*read)[1]);
    if (now >= count) {
      (void)conn.CommandAt(key, {"UNWATCH"});  // on a cluster, the node that has the WATCH
      return now;
    }
    conn.Append({"MULTI"});
    conn.Append({"HSET", key, ns, std::to_string(count)});
    conn.Append({"EXEC"});
    StatusOr<std::vector<Reply>> written = conn.Flush();
    if (!written.ok()) return written.status();
    if (Status s = FirstError(*written); !s.ok()) return s;
    if (!written->back().is_nil()) return count;  // nil: the count changed after WATCH
  }
  return Status::Conflict("partitions: the count of " + ns +
                          " kept changing while it was being raised; try again");
}

}  // namespace baton::internal
