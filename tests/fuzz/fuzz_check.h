#pragma once
// What the fuzz targets share: a property check that aborts (so libFuzzer reports the input as a
// crash and the replay test fails), and the split of one input into several parser arguments.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "baton/status.h"

namespace baton::fuzz {

[[noreturn]] inline void PropertyFailed(const char* where, int line, const char* condition,
                                        std::string_view detail) {
  std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n  %.*s\n", where, line, condition,
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

// BATON_FUZZ_CHECK(condition, detail): `detail` (a string) says what was seen.
#define BATON_FUZZ_CHECK(condition, detail)                                                  \
  do {                                                                                       \
    if (!(condition)) ::baton::fuzz::PropertyFailed(__FILE__, __LINE__, #condition, detail); \
  } while (0)

inline std::string_view AsText(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The input's lines ('\n' separated; a last line without '\n' counts). Targets that take several
// strings read them one per line, so seeds are easy to write by hand.
inline std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

// A rejected input: kInvalidArgument, "<field>: <rule>" with `field` one of `fields` (or a dotted
// path below one: "headers.x-id", "trace.traceparent") and a non-empty rule.
inline bool NamesAField(const Status& status, std::initializer_list<std::string_view> fields) {
  if (status.code() != StatusCode::kInvalidArgument) return false;
  const std::string& message = status.message();
  for (std::string_view field : fields) {
    if (message.compare(0, field.size(), field) != 0) continue;
    std::string_view rest = std::string_view(message).substr(field.size());
    if (!rest.empty() && rest.front() == '.') {
      const std::size_t colon = rest.find(": ");
      if (colon == std::string_view::npos || colon == 1) continue;
      rest.remove_prefix(colon);
    }
    if (rest.size() > 2 && rest.substr(0, 2) == ": ") return true;
  }
  return false;
}

}  // namespace baton::fuzz
