#pragma once
// A (namespace, task type) pair, and the Redis reads that find them (docs/keyspace.md): the SET
// baton:v2:namespaces (a directory clients fill in as a convenience), the per-namespace SET
// baton:v2:{NS}:types (which the functions fill in for every type they touch) and, for namespaces
// nobody registered, a SCAN for those type sets.
#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "baton/status.h"
#include "broker/redis_connection.h"

namespace baton::internal {

struct TypeRef {
  std::string ns;
  std::string type;
  auto operator<=>(const TypeRef&) const = default;
};

// The members of baton:v2:namespaces (SMEMBERS; invalid names skipped).
StatusOr<std::vector<std::string>> ListRegisteredNamespaces(RedisConnection& conn);

// Every namespace that has a type set, registered or not: SCAN MATCH baton:v2:{*}:types TYPE set,
// `count` keys per call (one call per `count` keys of the whole database). Sorted, unique.
StatusOr<std::vector<std::string>> ScanNamespaces(RedisConnection& conn, int count = 1000);

// The namespace of a key named baton:v2:{NS}:types, or nullopt for any other key.
std::optional<std::string> NamespaceOfTypesKey(std::string_view key);

// The types of each namespace (one pipelined SMEMBERS per namespace), sorted.
StatusOr<std::vector<TypeRef>> ListTypes(RedisConnection& conn,
                                         const std::vector<std::string>& namespaces);

}  // namespace baton::internal
