#pragma once
// LOCAL KEY HELPER. src/core/keys.h (the one place key names are built) has no builder for the
// rescue state yet; until the lead adds `Keys::Rescue(type)` there, this is the only place the
// name is built. Documented in docs/rescue.md (and to be listed in docs/keyspace.md):
//   baton:{NS}:rescue:TYPE  HASH  written by `baton rescue start`, deleted by `baton rescue finish`
#include <string>
#include <string_view>

#include "core/keys.h"

namespace baton::internal {

inline std::string RescueKey(const Keys& keys, std::string_view type) {
  return keys.prefix() + "rescue:" + std::string(type);
}

// The disaster-recovery group of `group`.
inline std::string RescueGroupName(std::string_view group) {
  return std::string(group) + ".rescue";
}

}  // namespace baton::internal
