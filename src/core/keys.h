#pragma once
// The one place where C++ builds Baton's Redis key names (docs/keyspace.md). Every key of a
// namespace carries the hash tag {ns} so one namespace lives in one Redis Cluster slot.
#include <string>
#include <string_view>

namespace baton::internal {

class Keys {
 public:
  explicit Keys(std::string_view ns) : prefix_("baton:{" + std::string(ns) + "}:") {}

  std::string Stream(std::string_view type) const {
    return prefix_ + "stream:" + std::string(type);
  }
  std::string Scheduled(std::string_view type) const {
    return prefix_ + "scheduled:" + std::string(type);
  }
  std::string Dead(std::string_view type) const { return prefix_ + "dead:" + std::string(type); }
  std::string Tasks() const { return prefix_ + "tasks"; }
  std::string Bodies() const { return prefix_ + "bodies"; }
  std::string Errors() const { return prefix_ + "errors"; }
  std::string Events() const { return prefix_ + "events"; }
  std::string Types() const { return prefix_ + "types"; }
  std::string Done(std::string_view id) const { return prefix_ + "done:" + std::string(id); }
  std::string Unique(std::string_view key) const { return prefix_ + "unique:" + std::string(key); }
  std::string Rescue(std::string_view type) const {
    return prefix_ + "rescue:" + std::string(type);
  }
  const std::string& prefix() const { return prefix_; }

  static constexpr std::string_view kNamespaces = "baton:namespaces";
  static constexpr std::string_view kCron = "baton:cron";
  static constexpr std::string_view kWakeupChannel = "baton:wakeup";

 private:
  std::string prefix_;
};

}  // namespace baton::internal
