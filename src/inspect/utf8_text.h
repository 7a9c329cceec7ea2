#pragma once
// Text read from Redis is bytes: a worker's stderr cut in the middle of a character, or a foreign
// writer, can leave invalid UTF-8 there. JSON (nlohmann) refuses such strings, so everything the
// Inspector shows passes through here first: each invalid sequence becomes U+FFFD.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace baton::internal {

// `text` with every ill-formed UTF-8 subsequence replaced by U+FFFD (the Unicode "maximal
// subpart" practice, as nlohmann's error_handler_t::replace does). Valid text comes back as is.
std::string ValidUtf8(std::string_view text);
// True when `text` is well-formed UTF-8.
bool IsValidUtf8(std::string_view text);
// Applies ValidUtf8 to every string and object key in `document`.
void MakeValidUtf8(nlohmann::json& document);

}  // namespace baton::internal
