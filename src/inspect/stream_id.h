#pragma once
// Redis stream entry ids ("1722489600123-0") as ordered values, for the comparisons the inspector
// and the rescue make (is this entry before the group's last-delivered-id?).
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton::internal {

struct StreamId {
  std::uint64_t ms = 0;
  std::uint64_t seq = 0;

  // "MS-SEQ" or "MS" (seq 0); nullopt for anything else.
  static std::optional<StreamId> Parse(std::string_view text);
  std::string ToString() const;
  // The smallest id after / before this one (saturating at the ends).
  StreamId Next() const;
  StreamId Prev() const;

  auto operator<=>(const StreamId&) const = default;
};

// The Unix ms an id was generated at; 0 when `text` is not a stream id.
std::int64_t StreamIdMs(std::string_view text);

// Compares two textual ids (unparsable ones sort first).
int CompareStreamIds(std::string_view a, std::string_view b);

}  // namespace baton::internal
