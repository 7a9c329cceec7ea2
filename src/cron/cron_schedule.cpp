#include "cron/cron_schedule.h"

#include <date/tz.h>

#include <algorithm>
#include <exception>
#include <optional>

namespace baton::internal {
namespace {

using std::chrono::seconds;
using std::chrono::sys_seconds;

// Searches stop here; the tz database and the expression arithmetic are both well defined before.
constexpr sys_seconds kEndOfTime{seconds{253402214400}};  // 9999-12-31T00:00:00Z
// Before this no zone lookup is made for the previous period (zones begin at year -32767).
constexpr sys_seconds kBeginOfTime{seconds{-5364662400}};  // 1800-01-01T00:00:00Z

// Local wall-clock time of the sys instant `t` in a period whose UTC offset is `offset`.
std::chrono::local_seconds ToLocal(sys_seconds t, seconds offset) {
  return std::chrono::local_seconds{t.time_since_epoch() + offset};
}

sys_seconds ToSys(std::chrono::local_seconds t, seconds offset) {
  return sys_seconds{t.time_since_epoch() - offset};
}

}  // namespace

StatusOr<CronSchedule> CronSchedule::Make(CronExpression expression, std::string tz_name) {
  const date::time_zone* zone = nullptr;
  try {
    zone = date::locate_zone(tz_name);
  } catch (const std::exception&) {
    // The date library throws std::runtime_error "<name> not found in timezone database".
    zone = nullptr;
  }
  if (zone == nullptr) {
    return Status::InvalidArgument("timezone", "unknown IANA time zone \"" + tz_name + "\"");
  }
  return CronSchedule(std::move(expression), std::move(tz_name), zone);
}

// The zone's timeline is a sequence of periods [begin, end) with one UTC offset each. Within a
// period local time is sys time plus the offset, so the first local match inside the period is
// also the first real one. Between periods the DST policy decides: a gap (offset grows) fires
// once at the transition instant for fixed-hour jobs; a repeat (offset shrinks) is searched again
// only by wildcard-hour jobs.
sys_seconds CronSchedule::Next(sys_seconds after) const {
  // Outside 1800..9999 there is nothing to schedule; the clamp also keeps the offset arithmetic
  // below from overflowing (sys_seconds::max() is a common "never" value).
  if (after >= kEndOfTime) return sys_seconds::max();
  after = std::max(after, kBeginOfTime);
  const bool fixed_hour = !expression_.hour_is_wildcard();
  date::sys_info period = zone_->get_info(after);
  std::chrono::local_seconds from = ToLocal(after, period.offset) + seconds{1};
  if (fixed_hour && period.begin > kBeginOfTime) {
    // `after` may lie in the second occurrence of a repeated hour, already fired in the first.
    const date::sys_info previous = zone_->get_info(period.begin - seconds{1});
    from = std::max(from, ToLocal(period.begin, previous.offset));
  }
  while (true) {
    const std::chrono::local_seconds period_end = ToLocal(period.end, period.offset);
    if (const auto match = expression_.NextMatch(from, period_end)) {
      return ToSys(*match, period.offset);
    }
    if (period.end >= kEndOfTime) return sys_seconds::max();
    const date::sys_info next = zone_->get_info(period.end);
    const std::chrono::local_seconds next_begin = ToLocal(period.end, next.offset);
    if (fixed_hour && next_begin > period_end && expression_.NextMatch(period_end, next_begin)) {
      return period.end;  // a skipped local time: the first instant after the gap, once
    }
    from = fixed_hour ? std::max(next_begin, period_end) : next_begin;
    period = next;
  }
}

bool CronSchedule::PastZoneData(sys_seconds t) const {
  // The last period of the data is open-ended (it ends in year 32767). It only means "no data"
  // when it began recently, i.e. the zone was still changing offsets when the data ran out.
  using namespace date::literals;
  constexpr sys_seconds kRecent = date::sys_days{2030_y / date::January / 1};
  constexpr sys_seconds kOpenEnded = date::sys_days{9999_y / date::December / 31};
  if (t >= kEndOfTime) return false;
  const date::sys_info period = zone_->get_info(std::max(t, kBeginOfTime));
  return period.begin >= kRecent && period.end > kOpenEnded;
}

std::vector<sys_seconds> CronSchedule::NextN(sys_seconds after, std::size_t n) const {
  std::vector<sys_seconds> out;
  out.reserve(std::min<std::size_t>(n, 1024));
  while (out.size() < n) {
    after = Next(after);
    if (after == sys_seconds::max()) break;
    out.push_back(after);
  }
  return out;
}

}  // namespace baton::internal
