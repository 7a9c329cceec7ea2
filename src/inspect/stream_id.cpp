#include "inspect/stream_id.h"

#include <charconv>
#include <limits>

namespace baton::internal {

namespace {

bool ParseU64(std::string_view text, std::uint64_t* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::optional<StreamId> StreamId::Parse(std::string_view text) {
  StreamId id;
  std::size_t dash = text.find('-');
  if (dash == std::string_view::npos) {
    if (!ParseU64(text, &id.ms)) return std::nullopt;
    return id;
  }
  if (!ParseU64(text.substr(0, dash), &id.ms) || !ParseU64(text.substr(dash + 1), &id.seq)) {
    return std::nullopt;
  }
  return id;
}

std::string StreamId::ToString() const { return std::to_string(ms) + "-" + std::to_string(seq); }

StreamId StreamId::Next() const {
  constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
  if (seq < kMax) return {ms, seq + 1};
  if (ms < kMax) return {ms + 1, 0};
  return *this;
}

StreamId StreamId::Prev() const {
  constexpr auto kMax = std::numeric_limits<std::uint64_t>::max();
  if (seq > 0) return {ms, seq - 1};
  if (ms > 0) return {ms - 1, kMax};
  return *this;
}

std::int64_t StreamIdMs(std::string_view text) {
  auto id = StreamId::Parse(text);
  return id ? static_cast<std::int64_t>(id->ms) : 0;
}

int CompareStreamIds(std::string_view a, std::string_view b) {
  auto x = StreamId::Parse(a);
  auto y = StreamId::Parse(b);
  if (!x || !y) return (x ? 1 : 0) - (y ? 1 : 0);
  if (*x < *y) return -1;
  if (*y < *x) return 1;
  return 0;
}

}  // namespace baton::internal
