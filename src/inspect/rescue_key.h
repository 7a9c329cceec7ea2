#pragma once
// Names used by `baton rescue` (docs/rescue.md); the key itself comes from Keys::Rescue.
#include <string>
#include <string_view>

#include "core/keys.h"

namespace baton::internal {

inline std::string RescueKey(const Keys& keys, std::string_view type) { return keys.Rescue(type); }

// The disaster-recovery group of `group`.
inline std::string RescueGroupName(std::string_view group) {
  return std::string(group) + ".rescue";
}

}  // namespace baton::internal
