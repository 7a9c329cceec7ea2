// Cron lines and time zones as stored in job definitions (src/cron/cron_expression.h,
// cron_schedule.h). Input lines: the cron line, the zone name (default UTC), and the instant to
// search from in Unix seconds (any int64; default 2024-08-01). Properties:
//  - a rejected line or zone gets kInvalidArgument naming "schedule" / "timezone";
//  - Parse(ToString()) == the expression, and ToString() is a fixed point;
//  - NextMatch returns a matching local time inside its window;
//  - Next is strictly later than `after`, NextN ascends; in UTC, Next agrees with NextMatch.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <string>

#include "cron/cron_expression.h"
#include "cron/cron_schedule.h"
#include "fuzz_check.h"
#include "fuzz_targets.h"

namespace baton::fuzz {
namespace {

using std::chrono::local_seconds;
using std::chrono::seconds;
using std::chrono::sys_seconds;

// The schedule's supported range (cron_schedule.h): 1800-01-01 .. 9999-12-31.
constexpr std::int64_t kFirstSecond = -5364662400;
constexpr std::int64_t kLastSecond = 253402214400;

std::int64_t ReadInstant(const std::vector<std::string_view>& lines) {
  std::int64_t value = 1722470400;
  if (lines.size() > 2) {
    std::int64_t parsed = 0;
    const std::string_view text = lines[2];
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (ec == std::errc() && end == text.data() + text.size()) value = parsed;
  }
  return value;
}

std::string Text(sys_seconds t) { return std::to_string(t.time_since_epoch().count()); }

void CheckExpression(const internal::CronExpression& expression, std::int64_t instant) {
  const std::string canonical = expression.ToString();
  StatusOr<internal::CronExpression> again = internal::CronExpression::Parse(canonical);
  BATON_FUZZ_CHECK(again.ok(), again.status().ToString() + " for " + canonical);
  BATON_FUZZ_CHECK(*again == expression, canonical);
  BATON_FUZZ_CHECK(again->ToString() == canonical, canonical + " -> " + again->ToString());

  const std::int64_t clamped = std::clamp(instant, kFirstSecond, kLastSecond - 2 * 31622400);
  const local_seconds from{seconds{clamped}};
  const local_seconds until = from + seconds{2 * 31622400};  // two years
  if (const auto match = expression.NextMatch(from, until)) {
    BATON_FUZZ_CHECK(*match >= from && *match < until && expression.Matches(*match),
                     canonical + " at " + std::to_string(match->time_since_epoch().count()));
  }
}

void CheckSchedule(const internal::CronSchedule& schedule, std::int64_t instant) {
  const sys_seconds after{seconds{instant}};
  const sys_seconds next = schedule.Next(after);
  BATON_FUZZ_CHECK(next > after, Text(next) + " after " + Text(after));
  if (next != sys_seconds::max()) (void)schedule.PastZoneData(next);

  const std::vector<sys_seconds> times = schedule.NextN(after, 4);
  for (std::size_t i = 0; i < times.size(); ++i) {
    BATON_FUZZ_CHECK(times[i] > (i == 0 ? after : times[i - 1]), Text(times[i]));
  }
  BATON_FUZZ_CHECK(times.empty() || times.front() == next, Text(times.front()));

  if (schedule.timezone() == "UTC" && next != sys_seconds::max()) {
    // No offsets, no DST: the first match of the local clock is the fire time.
    const std::int64_t start = std::max(instant, kFirstSecond - 1) + 1;
    const auto match = schedule.expression().NextMatch(local_seconds{seconds{start}},
                                                       local_seconds{seconds{kLastSecond}});
    BATON_FUZZ_CHECK(match && match->time_since_epoch() == next.time_since_epoch(),
                     schedule.expression().ToString() + ": Next " + Text(next));
  }
}

}  // namespace

int FuzzCronExpression(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::string_view> lines = Lines(AsText(data, size));
  const std::string_view line = lines.empty() ? std::string_view() : lines[0];
  const std::string zone = lines.size() > 1 ? std::string(lines[1]) : "UTC";
  const std::int64_t instant = ReadInstant(lines);

  StatusOr<internal::CronExpression> expression = internal::CronExpression::Parse(line);
  if (!expression.ok()) {
    BATON_FUZZ_CHECK(NamesAField(expression.status(), {"schedule"}),
                     expression.status().ToString());
    return 0;
  }
  CheckExpression(*expression, instant);

  StatusOr<internal::CronSchedule> schedule = internal::CronSchedule::Make(*expression, zone);
  if (!schedule.ok()) {
    BATON_FUZZ_CHECK(NamesAField(schedule.status(), {"timezone"}), schedule.status().ToString());
    return 0;
  }
  CheckSchedule(*schedule, instant);
  return 0;
}

}  // namespace baton::fuzz

BATON_FUZZ_MAIN(baton::fuzz::FuzzCronExpression)
