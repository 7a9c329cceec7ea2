#pragma once
// A (namespace, task type) pair, and the directory of every pair in use: the SET baton:namespaces
// and, per namespace, the SET baton:{ns}:types (docs/keyspace.md).
#include <compare>
#include <string>
#include <vector>

#include "baton/status.h"
#include "broker/redis_connection.h"

namespace baton::internal {

struct TypeRef {
  std::string ns;
  std::string type;
  auto operator<=>(const TypeRef&) const = default;
};

// Every (ns, type) registered in Redis, sorted. Two round trips (SMEMBERS of the namespaces, then
// one pipelined SMEMBERS per namespace). kUnavailable when the connection broke.
StatusOr<std::vector<TypeRef>> DiscoverTypes(RedisConnection& conn);

}  // namespace baton::internal
