#pragma once
// Finds the exact bytes of one member of a JSON object document, so that a task's payload can be
// kept byte for byte as the producer serialized it (numbers such as 12345678901234567890 or 1.10,
// key order and escapes survive; a parse/dump round trip would normalise them).
#include <cstddef>
#include <optional>
#include <string_view>

#include "baton/status.h"

namespace baton::internal {

// The text of the value of member `key` of the top-level object in `document`, without
// surrounding whitespace; the last one when the key repeats (as nlohmann's parser keeps the last).
// Requires `document` to be valid JSON (call it after a successful parse): the scan checks only
// what it needs. Returns nullopt when the document is not an object or has no such member.
std::optional<std::string_view> FindTopLevelMember(std::string_view document, std::string_view key);

// How deeply arrays and objects nest in `text` (0 for a scalar), counting only brackets outside
// strings; the text need not be valid JSON. nlohmann::json parses any depth but dump() recurses
// once per level: a payload nested 250,000 deep (it fits in 512 KiB) would overflow the stack of
// whoever prints it, so printers check this first.
std::size_t JsonNestingDepth(std::string_view text);

// The deepest JSON that Baton's tools print as JSON (deeper text is shown as text), and the
// deepest they accept where they copy or print what they parse: extra task fields, cron
// definitions, console request bodies.
inline constexpr std::size_t kMaxPrintedJsonDepth = 256;

// Ok, or kInvalidArgument "<field>: must not nest arrays and objects deeper than <limit> levels"
// when `text` nests deeper than kMaxPrintedJsonDepth.
Status CheckJsonDepth(std::string_view field, std::string_view text);

}  // namespace baton::internal
