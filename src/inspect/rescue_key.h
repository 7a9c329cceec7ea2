#pragma once
// Names used by `baton rescue` (docs/rescue.md); the state key itself is Keys::Rescue.
#include <string>
#include <string_view>

namespace baton::internal {

// The disaster-recovery group of `group`.
inline std::string RescueGroupName(std::string_view group) {
  return std::string(group) + ".rescue";
}

}  // namespace baton::internal
