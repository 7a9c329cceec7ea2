#pragma once
// Times and durations in the plain words the doctor and the CLI print: "2024-08-01 12:00:05 UTC",
// "3 min 20 s".
#include <cstdint>
#include <string>

namespace baton::internal {

// Unix ms as "YYYY-MM-DD HH:MM:SS UTC".
std::string FormatTime(std::int64_t unix_ms);
// A duration: "850 ms", "42 s", "3 min 20 s", "2 h 5 min", "3 d 4 h". Negative values are
// formatted by their magnitude.
std::string FormatDuration(std::int64_t ms);

}  // namespace baton::internal
