#include "scheduler/type_directory.h"

#include <algorithm>

#include "broker/keys.h"
#include "broker/partitions.h"

namespace baton::internal {

TypeDirectory::TypeDirectory(std::vector<std::string> namespaces)
    : namespaces_([&] {
        std::sort(namespaces.begin(), namespaces.end());
        namespaces.erase(std::unique(namespaces.begin(), namespaces.end()), namespaces.end());
        return std::move(namespaces);
      }()) {}

bool TypeDirectory::Serves(std::string_view ns) const {
  // A partition "NS:p" is served with its namespace.
  return namespaces_.empty() ||
         std::binary_search(namespaces_.begin(), namespaces_.end(), BaseNamespace(ns));
}

bool TypeDirectory::Add(const TypeRef& type) {
  if (!Serves(type.ns)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (!types_.emplace(type, ++seq_).second) return false;
  if (known_namespaces_.insert(type.ns).second || !registered_.contains(type.ns)) {
    new_namespaces_.insert(type.ns);
  }
  return true;
}

std::vector<TypeRef> TypeDirectory::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TypeRef> out;
  out.reserve(types_.size());
  for (const auto& [type, seq] : types_) out.push_back(type);
  return out;
}

bool TypeDirectory::HasNewNamespaces() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !new_namespaces_.empty();
}

std::vector<TypeRef> TypeDirectory::Merge(const std::vector<TypeRef>& types) {
  std::vector<TypeRef> added;
  for (const TypeRef& t : types) {
    if (!Serves(t.ns)) continue;
    known_namespaces_.insert(t.ns);
    if (types_.emplace(t, ++seq_).second) added.push_back(t);
  }
  return added;
}

Status TypeDirectory::Register(RedisConnection& conn, const std::vector<TypeRef>& types) {
  std::vector<std::string> missing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const TypeRef& t : types) {
      if (!registered_.contains(t.ns) &&
          (missing.empty() || missing.back() != t.ns)) {  // `types` is sorted by namespace
        missing.push_back(t.ns);
      }
    }
  }
  if (missing.empty()) return Status::Ok();
  std::vector<std::string> sadd = {"SADD", std::string(Keys::kNamespaces)};
  sadd.insert(sadd.end(), missing.begin(), missing.end());
  StatusOr<Reply> reply = conn.Command(sadd);
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return StatusFromErrorReply(*reply).WithContext("SADD namespaces");
  std::lock_guard<std::mutex> lock(mu_);
  registered_.insert(missing.begin(), missing.end());
  return Status::Ok();
}

StatusOr<std::vector<TypeRef>> TypeDirectory::Refresh(RedisConnection& conn, bool scan) {
  std::uint64_t start_seq = 0;
  std::set<std::string> namespaces;
  {
    std::lock_guard<std::mutex> lock(mu_);
    start_seq = seq_;
    namespaces = known_namespaces_;
  }
  std::vector<std::string> registered;
  if (namespaces_.empty()) {
    StatusOr<std::vector<std::string>> listed = ListRegisteredNamespaces(conn);
    if (!listed.ok()) return listed.status();
    registered = std::move(*listed);
    namespaces.insert(registered.begin(), registered.end());
    if (scan) {
      StatusOr<std::vector<std::string>> scanned = ScanNamespaces(conn);
      if (!scanned.ok()) return scanned.status();
      namespaces.insert(scanned->begin(), scanned->end());
    }
  } else {
    // The configured namespaces and every partition of each.
    StatusOr<std::vector<int>> counts = ReadPartitionCounts(conn, namespaces_);
    if (!counts.ok()) return counts.status();
    for (std::size_t i = 0; i < namespaces_.size(); ++i) {
      for (int p = 0; p < (*counts)[i]; ++p)
        namespaces.insert(PartitionNamespace(namespaces_[i], p));
    }
  }
  StatusOr<std::vector<TypeRef>> found =
      ListTypes(conn, std::vector<std::string>(namespaces.begin(), namespaces.end()));
  if (!found.ok()) return found.status();

  std::vector<TypeRef> added;
  {
    std::lock_guard<std::mutex> lock(mu_);
    registered_.insert(registered.begin(), registered.end());
    // Drop what Redis no longer lists (a flushed database), except pairs a message added since
    // the read began: their SADD may have come after it.
    std::erase_if(types_, [&](const auto& entry) {
      return entry.second <= start_seq &&
             !std::binary_search(found->begin(), found->end(), entry.first);
    });
    added = Merge(*found);
  }
  if (Status st = Register(conn, *found); !st.ok()) return st;
  return added;
}

StatusOr<std::vector<TypeRef>> TypeDirectory::SyncNewNamespaces(RedisConnection& conn) {
  std::vector<std::string> fresh;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fresh.assign(new_namespaces_.begin(), new_namespaces_.end());
  }
  if (fresh.empty()) return std::vector<TypeRef>{};
  StatusOr<std::vector<TypeRef>> found = ListTypes(conn, fresh);
  if (!found.ok()) return found.status();
  std::vector<TypeRef> added;
  {
    std::lock_guard<std::mutex> lock(mu_);
    added = Merge(*found);
  }
  if (Status st = Register(conn, *found); !st.ok()) return st;
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& ns : fresh) new_namespaces_.erase(ns);
  return added;
}

}  // namespace baton::internal
