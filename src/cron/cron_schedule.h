#pragma once
// A cron expression bound to an IANA time zone: the real instants (UTC) at which a job fires.
//
// DST policy (docs/cron.md "Daylight saving time"):
//  - A local time that does not exist (spring-forward gap) fires once, at the first instant after
//    the gap, for jobs with a fixed hour (`30 2 * * *` fires at 03:00 on the spring day). Jobs
//    whose hour field uses `*` or a step fire only at real instants, so they just skip the gap.
//  - A local time that occurs twice (fall-back overlap) fires once, at its first occurrence, for
//    jobs with a fixed hour; jobs whose hour field uses `*` or a step fire at both occurrences
//    (`*/30 * * * *` keeps firing every 30 real minutes through the repeated hour), as Vixie cron.
//
// Time zone rules come from the system tzdata (/usr/share/zoneinfo) through Howard Hinnant's date
// library, which uses the explicit transitions of the zone files (up to 2037): past the last one
// the zone keeps its last offset.
#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "baton/status.h"
#include "cron/cron_expression.h"

namespace date {
class time_zone;
}  // namespace date

namespace baton::internal {

class CronSchedule {
 public:
  // Binds `expression` to the zone `tz_name` ("UTC", "Europe/Berlin"). Fails with
  // kInvalidArgument "timezone: unknown IANA time zone \"Mars/Base\"" when the zone is unknown.
  // The first call loads the zone database (disk reads); later calls are cheap. Thread-safe.
  static StatusOr<CronSchedule> Make(CronExpression expression, std::string tz_name);

  // The first fire time strictly after `after`, following the DST policy above. The supported
  // range is 1800-01-01 .. 9999-12-31 (an earlier `after` counts as 1800-01-01); returns
  // sys_seconds::max() when no fire time is left before its end. Thread-safe; well under a
  // microsecond to a few microseconds (it skips by field, never scans minute by minute).
  std::chrono::sys_seconds Next(std::chrono::sys_seconds after) const;

  // The next `n` fire times after `after`, ascending (fewer only at the end of time).
  std::vector<std::chrono::sys_seconds> NextN(std::chrono::sys_seconds after, std::size_t n) const;

  // True when `t` lies past the zone's explicit rules: the system tzdata lists DST transitions
  // only up to 2037, after which the date library keeps the last offset (Europe/Berlin stays on
  // CET all year from 2037-10-25). A zone whose offsets were still changing in its last years
  // then shows wrong local times; a zone without recent changes (UTC, Asia/Tokyo) never does.
  bool PastZoneData(std::chrono::sys_seconds t) const;

  const CronExpression& expression() const { return expression_; }
  const std::string& timezone() const { return tz_name_; }

 private:
  CronSchedule(CronExpression expression, std::string tz_name, const date::time_zone* zone)
      : expression_(std::move(expression)), tz_name_(std::move(tz_name)), zone_(zone) {}

  CronExpression expression_;
  std::string tz_name_;
  const date::time_zone* zone_;  // owned by the date library's database; lives for the process
};

}  // namespace baton::internal
