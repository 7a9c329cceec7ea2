#include "inspect/time_text.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace baton::internal {

std::string FormatTime(std::int64_t unix_ms) {
  using namespace std::chrono;
  sys_seconds t{seconds(unix_ms / 1000)};
  auto day = floor<days>(t);
  year_month_day ymd{day};
  hh_mm_ss<seconds> hms{t - day};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02u %02lld:%02lld:%02lld UTC",
                static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                static_cast<unsigned>(ymd.day()), static_cast<long long>(hms.hours().count()),
                static_cast<long long>(hms.minutes().count()),
                static_cast<long long>(hms.seconds().count()));
  return buf;
}

std::string FormatDuration(std::int64_t ms) {
  ms = std::llabs(ms);
  if (ms < 1000) return std::to_string(ms) + " ms";
  std::int64_t s = ms / 1000;
  if (s < 60) return std::to_string(s) + " s";
  std::int64_t m = s / 60;
  if (m < 60) return std::to_string(m) + " min " + std::to_string(s % 60) + " s";
  std::int64_t h = m / 60;
  if (h < 24) return std::to_string(h) + " h " + std::to_string(m % 60) + " min";
  return std::to_string(h / 24) + " d " + std::to_string(h % 24) + " h";
}

}  // namespace baton::internal
