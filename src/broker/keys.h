#pragma once
// The one place where C++ builds Baton's Redis key names (docs/keyspace.md). Every key of a
// namespace carries the hash tag {ns} so one namespace lives in one Redis Cluster slot. Protocol
// v2 keys start with "baton:v2:" so that they never meet v1's during a rolling upgrade.
#include <string>
#include <string_view>

namespace baton::internal {

class Keys {
 public:
  explicit Keys(std::string_view ns) : prefix_("baton:v2:{" + std::string(ns) + "}:") {}

  // Per task type.
  std::string Stream(std::string_view type) const { return Typed("stream:", type); }
  std::string Scheduled(std::string_view type) const { return Typed("scheduled:", type); }
  // HASH consumer -> lease_ms: the lease length each consumer asked for (baton_v2_dequeue/extend).
  std::string Leases(std::string_view type) const { return Typed("leases:", type); }
  std::string Dead(std::string_view type) const { return Typed("dead:", type); }
  std::string Rescue(std::string_view type) const { return Typed("rescue:", type); }
  // Per namespace.
  std::string Tasks() const { return prefix_ + "tasks"; }
  std::string Bodies() const { return prefix_ + "bodies"; }
  std::string Errors() const { return prefix_ + "errors"; }
  std::string Events() const { return prefix_ + "events"; }
  std::string Types() const { return prefix_ + "types"; }
  std::string Done() const { return prefix_ + "done"; }    // ZSET id -> finished ms
  std::string Ended() const { return prefix_ + "ended"; }  // HASH id -> non-done final record
  std::string Config() const { return prefix_ + "config"; }
  std::string Unique(std::string_view key) const { return prefix_ + "unique:" + std::string(key); }
  const std::string& prefix() const { return prefix_; }

  // Not hash-tagged: directories and cron state, never touched together with a namespace's keys.
  static constexpr std::string_view kNamespaces = "baton:v2:namespaces";
  static constexpr std::string_view kCron = "baton:cron";
  static constexpr std::string_view kCronState = "baton:cron:state";
  static constexpr std::string_view kWakeupChannel = "baton:v2:wakeup";
  static constexpr std::string_view kTypesChannel = "baton:v2:types";

 private:
  std::string Typed(std::string_view kind, std::string_view type) const {
    std::string key;
    key.reserve(prefix_.size() + kind.size() + type.size());
    key.append(prefix_).append(kind).append(type);
    return key;
  }
  std::string prefix_;
};

}  // namespace baton::internal
