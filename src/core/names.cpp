// Name and id patterns of docs/keyspace.md, checked by hand (no std::regex: these run on every
// enqueue and delivery). None of the allowed characters can break a key: no '{', '}', '|', space.
#include <string_view>

#include "baton/task.h"

namespace baton {
namespace {

bool IsAsciiAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// ^[A-Za-z0-9][A-Za-z0-9<punct>]{0,max_len-1}$
bool MatchesNamePattern(std::string_view s, std::size_t max_len, std::string_view punct) {
  if (s.empty() || s.size() > max_len || !IsAsciiAlnum(s.front())) return false;
  for (char c : s.substr(1)) {
    if (!IsAsciiAlnum(c) && punct.find(c) == std::string_view::npos) return false;
  }
  return true;
}

}  // namespace

bool IsValidName(std::string_view name) { return MatchesNamePattern(name, 64, "_.-"); }

bool IsValidTaskId(std::string_view id) { return MatchesNamePattern(id, 128, "_.:-"); }

}  // namespace baton
