#pragma once
// A parsed cron line: which local calendar times match. Time zones and DST are not its concern
// (see cron_schedule.h); it answers "does this local wall-clock second match" and "which is the
// next local second that matches", skipping by field instead of scanning minute by minute.
//
// Syntax (docs/cron.md): 5 fields `minute hour day-of-month month day-of-week`, or 6 with a
// leading `second`; `*`, `?` (day fields only), lists `a,b`, ranges `a-b`, steps `*/n`, `a-b/n`,
// `a/n`; month names JAN-DEC and day names SUN-SAT (case-insensitive); 7 = Sunday; macros
// @yearly @annually @monthly @weekly @daily @midnight @hourly.
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "baton/status.h"

namespace baton::internal {

class CronExpression {
 public:
  // Parses a cron line. Errors are kInvalidArgument and name the field and the rule:
  // "schedule: minute: 61 is out of range 0..59", "schedule: expected 5 or 6 fields, got 3".
  static StatusOr<CronExpression> Parse(std::string_view text);

  // The canonical form: macros expanded, names and `7` replaced by numbers, `?` by `*`, `*/1` by
  // `*`, single spaces. A 6-field line keeps its seconds field. Parse(ToString()) == *this.
  std::string ToString() const;

  // True when the local wall-clock time `t` matches every field (day fields by the Vixie rule:
  // when day-of-month and day-of-week both start with something other than `*`, either may match).
  bool Matches(std::chrono::local_seconds t) const;

  // The first local time >= `from` and < `until` that matches, or nullopt when there is none.
  // Cost grows with the number of matching months/days/hours visited, not with the span in seconds.
  std::optional<std::chrono::local_seconds> NextMatch(std::chrono::local_seconds from,
                                                      std::chrono::local_seconds until) const;

  // True when the hour field uses `*` or a step (`*`, `*/2`, `0-23/3`): such a job fires at every
  // real instant whose local time matches, so twice in a repeated (fall-back) hour and never in a
  // skipped (spring-forward) one. False for fixed hours (`3`, `1,13`, `9-17`), which fire once.
  bool hour_is_wildcard() const { return hour_wildcard_; }
  bool has_seconds_field() const { return has_seconds_; }

  friend bool operator==(const CronExpression&, const CronExpression&) = default;

 private:
  CronExpression() = default;

  bool DayMatches(std::chrono::year_month_day ymd) const;

  std::uint64_t seconds_ = 0;        // bit s: second s (0..59)
  std::uint64_t minutes_ = 0;        // bit m: minute m (0..59)
  std::uint32_t hours_ = 0;          // bit h: hour h (0..23)
  std::uint32_t days_of_month_ = 0;  // bit d: day d (1..31)
  std::uint32_t months_ = 0;         // bit m: month m (1..12)
  std::uint32_t days_of_week_ = 0;   // bit d: weekday d (0 = Sunday .. 6)
  bool dom_star_ = false;            // day-of-month starts with `*` or `?` (Vixie's DOM_STAR)
  bool dow_star_ = false;            // day-of-week starts with `*` or `?` (Vixie's DOW_STAR)
  bool hour_wildcard_ = false;
  bool has_seconds_ = false;
  // Canonical text of each field, second first (empty when the line had 5 fields).
  std::array<std::string, 6> canonical_;
};

}  // namespace baton::internal
