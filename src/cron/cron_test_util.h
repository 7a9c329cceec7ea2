#pragma once
// Helpers shared by the cron tests: build UTC instants and print them as ISO-8601 so that a
// failing expectation shows readable times.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace baton::internal::testing {

inline std::chrono::sys_seconds Utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0,
                                    int s = 0) {
  using namespace std::chrono;
  return sys_days{year{y} / month{mo} / day{d}} + hours{h} + minutes{mi} + seconds{s};
}

inline std::chrono::local_seconds Local(int y, unsigned mo, unsigned d, int h = 0, int mi = 0,
                                        int s = 0) {
  return std::chrono::local_seconds{Utc(y, mo, d, h, mi, s).time_since_epoch()};
}

// "2026-03-08T07:00:00Z"
inline std::string Iso(std::chrono::sys_seconds t) {
  using namespace std::chrono;
  const sys_days day = floor<days>(t);
  const year_month_day ymd(day);
  const hh_mm_ss<seconds> tod(t - day);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(tod.hours().count()), static_cast<int>(tod.minutes().count()),
                static_cast<int>(tod.seconds().count()));
  return buf;
}

inline std::vector<std::string> IsoList(const std::vector<std::chrono::sys_seconds>& times) {
  std::vector<std::string> out;
  for (auto t : times) out.push_back(Iso(t));
  return out;
}

}  // namespace baton::internal::testing
