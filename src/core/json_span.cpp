#include "core/json_span.h"

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace baton::internal {
namespace {

constexpr std::size_t kNpos = std::string_view::npos;

std::size_t SkipWhitespace(std::string_view s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  return i;
}

// s[i] is the opening quote; returns the index just past the closing quote.
std::size_t SkipString(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;  // the escaped character, never a closing quote
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return kNpos;
}

// s[i] starts a value; returns the index just past it.
std::size_t SkipValue(std::string_view s, std::size_t i) {
  if (i >= s.size()) return kNpos;
  if (s[i] == '"') return SkipString(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == '"') {
        i = SkipString(s, i);
        if (i == kNpos) return kNpos;
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') --depth;
      ++i;
      if (depth == 0) return i;
    }
    return kNpos;
  }
  // A number or a literal: runs until a delimiter.
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\t' &&
         s[i] != '\n' && s[i] != '\r') {
    ++i;
  }
  return i;
}

bool KeyEquals(std::string_view raw, std::string_view key) {
  if (raw.find('\\') == std::string_view::npos) return raw == key;
  // An escaped key ("pay\u006coad"): let the JSON parser decode it.
  std::string quoted;
  quoted.reserve(raw.size() + 2);
  quoted.append("\"").append(raw).append("\"");
  const auto decoded = nlohmann::json::parse(quoted, nullptr, /*allow_exceptions=*/false);
  return decoded.is_string() && decoded.get_ref<const std::string&>() == key;
}

}  // namespace

std::optional<std::string_view> FindTopLevelMember(std::string_view document,
                                                   std::string_view key) {
  std::size_t i = 0;
  if (document.substr(0, 3) == "\xEF\xBB\xBF") i = 3;  // a UTF-8 BOM, as nlohmann allows
  i = SkipWhitespace(document, i);
  if (i >= document.size() || document[i] != '{') return std::nullopt;
  ++i;
  std::optional<std::string_view> found;
  while (true) {
    i = SkipWhitespace(document, i);
    if (i >= document.size() || document[i] != '"') return found;  // '}' or malformed
    const std::size_t key_end = SkipString(document, i);
    if (key_end == kNpos) return found;
    const std::string_view raw_key = document.substr(i + 1, key_end - i - 2);
    i = SkipWhitespace(document, key_end);
    if (i >= document.size() || document[i] != ':') return found;
    i = SkipWhitespace(document, i + 1);
    const std::size_t value_end = SkipValue(document, i);
    if (value_end == kNpos) return found;
    if (KeyEquals(raw_key, key)) found = document.substr(i, value_end - i);
    i = SkipWhitespace(document, value_end);
    if (i >= document.size() || document[i] != ',') return found;
    ++i;
  }
}

Status CheckJsonDepth(std::string_view field, std::string_view text) {
  if (JsonNestingDepth(text) <= kMaxPrintedJsonDepth) return Status::Ok();
  return Status::InvalidArgument(field, "must not nest arrays and objects deeper than " +
                                            std::to_string(kMaxPrintedJsonDepth) + " levels");
}

std::size_t JsonNestingDepth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace baton::internal
