#include "broker/partitions.h"

#include <algorithm>
#include <charconv>

#include "baton/task.h"

namespace baton::internal {

std::uint32_t Fnv1a32(std::string_view text) {
  std::uint32_t hash = 2166136261u;
  for (unsigned char byte : text) {
    hash ^= byte;
    hash *= 16777619u;  // unsigned: wraps modulo 2^32 as the rule says
  }
  return hash;
}

int PartitionOf(std::string_view task_id, int count) {
  if (count <= 1) return 0;
  return static_cast<int>(Fnv1a32(task_id) % static_cast<std::uint32_t>(count));
}

std::string PartitionNamespace(std::string_view ns, int partition) {
  std::string name(ns);
  if (partition > 0) name.append(":").append(std::to_string(partition));
  return name;
}

bool IsValidStorageNamespace(std::string_view name) {
  if (IsValidName(name)) return true;
  const std::size_t colon = name.find(':');
  if (colon == std::string_view::npos || !IsValidName(name.substr(0, colon))) return false;
  const std::string_view digits = name.substr(colon + 1);
  if (digits.empty() || digits.size() > 4 || digits.front() == '0') return false;
  int p = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return false;
    p = p * 10 + (c - '0');
  }
  return p < kMaxPartitions;
}

std::string_view BaseNamespace(std::string_view storage_ns) {
  return storage_ns.substr(0, storage_ns.find(':'));
}

int PartitionNumber(std::string_view storage_ns) {
  const std::size_t colon = storage_ns.find(':');
  if (colon == std::string_view::npos) return 0;
  int p = 0;
  std::from_chars(storage_ns.data() + colon + 1, storage_ns.data() + storage_ns.size(), p);
  return p;
}

int ParsePartitionCount(const Reply& reply) {
  if (reply.type != Reply::Type::kString || reply.str.empty()) return 1;
  long long count = 0;
  for (char c : reply.str) {
    if (c < '0' || c > '9') return 1;
    // Digits past the cap (however many) are the cap, as in every SDK.
    count = std::min<long long>(count * 10 + (c - '0'), kMaxPartitions + 1);
  }
  if (count < 1) return 1;
  return static_cast<int>(std::min<long long>(count, kMaxPartitions));
}

StatusOr<std::vector<int>> ReadPartitionCounts(RedisConnection& conn,
                                               const std::vector<std::string>& namespaces) {
  if (namespaces.empty()) return std::vector<int>();
  std::vector<std::string> command = {"HMGET", std::string(kPartitionsKey)};
  command.insert(command.end(), namespaces.begin(), namespaces.end());
  StatusOr<Reply> reply = conn.Command(command);
  if (!reply.ok()) return reply.status().WithContext("partition counts");
  if (reply->is_error()) return StatusFromErrorReply(*reply).WithContext("partition counts");
  if (!reply->is_array() || reply->elements.size() != namespaces.size()) {
    return Status::Internal("partition counts: HMGET " + std::string(kPartitionsKey) +
                            " did not answer one value per namespace");
  }
  std::vector<int> counts;
  counts.reserve(namespaces.size());
  for (const Reply& value : reply->elements) counts.push_back(ParsePartitionCount(value));
  return counts;
}

Status PartitionCounts::Refresh(RedisConnection& conn, const std::vector<std::string>& namespaces,
                                Clock::time_point now) {
  std::vector<std::string> stale;
  for (const std::string& ns : namespaces) {
    auto it = entries_.find(ns);
    if ((it == entries_.end() || now - it->second.read_at >= kPartitionRefresh) &&
        std::find(stale.begin(), stale.end(), ns) == stale.end()) {
      stale.push_back(ns);
    }
  }
  if (stale.empty()) return Status::Ok();
  StatusOr<std::vector<int>> counts = ReadPartitionCounts(conn, stale);
  if (!counts.ok()) return counts.status();
  for (std::size_t i = 0; i < stale.size(); ++i) entries_[stale[i]] = {(*counts)[i], now};
  return Status::Ok();
}

Status PartitionCounts::ReadNow(RedisConnection& conn, const std::string& ns,
                                Clock::time_point now) {
  StatusOr<std::vector<int>> counts = ReadPartitionCounts(conn, {ns});
  if (!counts.ok()) return counts.status();
  entries_[ns] = {counts->front(), now};
  return Status::Ok();
}

int PartitionCounts::Count(const std::string& ns) const {
  auto it = entries_.find(ns);
  return it == entries_.end() ? 1 : it->second.count;
}

}  // namespace baton::internal
