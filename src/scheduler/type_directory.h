#pragma once
// The (namespace, task type) pairs batond serves, found without anybody's help: a namespace whose
// producers never registered it in baton:v2:namespaces is served all the same. The pairs come
// from
//   - the messages of baton:v2:types ("NS|TYPE", published by the functions when a type is new to
//     its namespace) and baton:v2:wakeup ("NS|TYPE|due_ms"): Add();
//   - the SET baton:v2:namespaces and each namespace's SET baton:v2:{NS}:types: Refresh();
//   - a SCAN for baton:v2:{*}:types (Refresh(scan = true)): the safety net for namespaces created
//     while no batond listened.
// Every served namespace that has types is registered (SADD baton:v2:namespaces), so that the CLI
// lists it. Thread-safe: messages Add() on the subscriber thread while Refresh() runs elsewhere.
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "baton/status.h"
#include "broker/redis_connection.h"
#include "scheduler/type_ref.h"

namespace baton::internal {

class TypeDirectory {
 public:
  // `namespaces`: the only namespaces to serve; empty = every namespace.
  explicit TypeDirectory(std::vector<std::string> namespaces = {});

  bool Serves(std::string_view ns) const;

  // Adds one pair (seen in a message). True when it is served and was not known yet. A namespace
  // seen for the first time is queued for SyncNewNamespaces().
  bool Add(const TypeRef& type);

  // The served pairs, sorted.
  std::vector<TypeRef> Snapshot() const;

  // Re-reads the directory: the served namespaces (the configured ones; else the registered ones,
  // the known ones and, with `scan`, every namespace that has a types set), then their types. Adds
  // the new pairs and drops known pairs Redis no longer lists (unless a message added them while
  // this ran). Registers the namespaces found. Returns the pairs added.
  StatusOr<std::vector<TypeRef>> Refresh(RedisConnection& conn, bool scan);

  // Registers the namespaces first seen in messages since the last call and reads their other
  // types. Returns the pairs added. No Redis command when there are none.
  StatusOr<std::vector<TypeRef>> SyncNewNamespaces(RedisConnection& conn);
  bool HasNewNamespaces() const;

 private:
  // SADDs to baton:v2:namespaces the namespaces of `types` not known to be registered.
  Status Register(RedisConnection& conn, const std::vector<TypeRef>& types);
  // Adds `types` (mu_ held); returns the new ones.
  std::vector<TypeRef> Merge(const std::vector<TypeRef>& types);

  const std::vector<std::string> namespaces_;  // sorted; empty = all

  mutable std::mutex mu_;
  std::map<TypeRef, std::uint64_t> types_;  // pair -> sequence number of the Add that added it
  std::uint64_t seq_ = 0;
  std::set<std::string> known_namespaces_;
  std::set<std::string> registered_;      // known to be in baton:v2:namespaces
  std::set<std::string> new_namespaces_;  // seen in messages, not synced yet
};

}  // namespace baton::internal
