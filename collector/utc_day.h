#pragma once
// The UTC day of a Unix-ms time, "YYYY-MM-DD": the key of the daily totals.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace baton::collector {

inline std::string UtcDay(std::int64_t ms) {
  const auto days = std::chrono::floor<std::chrono::days>(
      std::chrono::sys_time<std::chrono::milliseconds>(std::chrono::milliseconds(ms)));
  const std::chrono::year_month_day ymd(days);
  char text[16];
  std::snprintf(text, sizeof text, "%04d-%02u-%02u", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
  return text;
}

}  // namespace baton::collector
