#include "cron/cron_schedule.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cron/cron_test_util.h"

namespace baton::internal {
namespace {

using std::chrono::sys_seconds;
using testing::Iso;
using testing::IsoList;
using testing::Utc;
using Times = std::vector<std::string>;

CronSchedule MustMake(std::string_view expression, std::string zone = "UTC") {
  auto expr = CronExpression::Parse(expression);
  EXPECT_TRUE(expr.ok()) << expression << ": " << expr.status().message();
  if (!expr.ok()) std::abort();
  auto schedule = CronSchedule::Make(*expr, zone);
  EXPECT_TRUE(schedule.ok()) << zone << ": " << schedule.status().message();
  if (!schedule.ok()) std::abort();
  return *schedule;
}

Times NextN(std::string_view expression, std::string zone, sys_seconds after, std::size_t n) {
  return IsoList(MustMake(expression, std::move(zone)).NextN(after, n));
}

TEST(CronScheduleTest, UnknownZoneIsRejected) {
  auto expr = CronExpression::Parse("0 0 * * *");
  ASSERT_TRUE(expr.ok());
  for (const char* zone : {"Mars/Base", "", "utc ", "../UTC", "Europe/"}) {
    auto schedule = CronSchedule::Make(*expr, zone);
    ASSERT_FALSE(schedule.ok()) << zone;
    EXPECT_EQ(schedule.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(schedule.status().message(),
              "timezone: unknown IANA time zone \"" + std::string(zone) + "\"");
  }
  EXPECT_TRUE(CronSchedule::Make(*expr, "Asia/Tokyo").ok());
  EXPECT_TRUE(CronSchedule::Make(*expr, "Etc/UTC").ok());
}

TEST(CronScheduleTest, NextIsStrictlyAfter) {
  const CronSchedule s = MustMake("0 12 * * *");
  EXPECT_EQ(Iso(s.Next(Utc(2026, 4, 1, 11, 59, 59))), "2026-04-01T12:00:00Z");
  EXPECT_EQ(Iso(s.Next(Utc(2026, 4, 1, 12))), "2026-04-02T12:00:00Z");
  EXPECT_EQ(Iso(s.Next(Utc(2026, 4, 1, 12, 0, 1))), "2026-04-02T12:00:00Z");
}

struct UtcCase {
  const char* expression;
  Times expected;  // the first fire times after 2026-01-01T00:00:00Z (a Thursday)
};

TEST(CronScheduleTest, ManyExpressionsInUtc) {
  const std::vector<UtcCase> cases = {
      {"* * * * *", {"2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z", "2026-01-01T00:03:00Z"}},
      {"*/15 * * * *",
       {"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:45:00Z",
        "2026-01-01T01:00:00Z"}},
      {"5/20 * * * *",
       {"2026-01-01T00:05:00Z", "2026-01-01T00:25:00Z", "2026-01-01T00:45:00Z",
        "2026-01-01T01:05:00Z"}},
      {"0 */6 * * *",
       {"2026-01-01T06:00:00Z", "2026-01-01T12:00:00Z", "2026-01-01T18:00:00Z",
        "2026-01-02T00:00:00Z"}},
      {"30 9 * * MON-FRI",
       {"2026-01-01T09:30:00Z", "2026-01-02T09:30:00Z", "2026-01-05T09:30:00Z",
        "2026-01-06T09:30:00Z"}},
      {"0 0 * * 0", {"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-18T00:00:00Z"}},
      {"0 0 * * 7", {"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-18T00:00:00Z"}},
      {"0 0 1 */3 *",
       {"2026-04-01T00:00:00Z", "2026-07-01T00:00:00Z", "2026-10-01T00:00:00Z",
        "2027-01-01T00:00:00Z"}},
      {"0 0 31 * *",
       {"2026-01-31T00:00:00Z", "2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z",
        "2026-07-31T00:00:00Z", "2026-08-31T00:00:00Z", "2026-10-31T00:00:00Z",
        "2026-12-31T00:00:00Z", "2027-01-31T00:00:00Z"}},
      {"0 0 29 2 *", {"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z", "2036-02-29T00:00:00Z"}},
      {"0 0 13 * 5",
       {"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z", "2026-01-13T00:00:00Z",
        "2026-01-16T00:00:00Z", "2026-01-23T00:00:00Z", "2026-01-30T00:00:00Z",
        "2026-02-06T00:00:00Z"}},
      {"0 0 */10 * 1",
       {"2026-05-11T00:00:00Z", "2026-06-01T00:00:00Z", "2026-08-31T00:00:00Z",
        "2026-09-21T00:00:00Z"}},
      {"0 0 1 1 *", {"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
      {"59 23 31 12 *", {"2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z"}},
      {"*/20 * * * * *",
       {"2026-01-01T00:00:20Z", "2026-01-01T00:00:40Z", "2026-01-01T00:01:00Z",
        "2026-01-01T00:01:20Z"}},
      {"30 0 12 * * *", {"2026-01-01T12:00:30Z", "2026-01-02T12:00:30Z"}},
      {"0,30 15 10 1 * *",
       {"2026-01-01T10:15:00Z", "2026-01-01T10:15:30Z", "2026-02-01T10:15:00Z",
        "2026-02-01T10:15:30Z"}},
      {"@hourly", {"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"}},
      {"@daily", {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"}},
      {"@midnight", {"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"}},
      {"@weekly", {"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"}},
      {"@monthly", {"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"}},
      {"@yearly", {"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
      {"@annually", {"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"}},
  };
  for (const UtcCase& c : cases) {
    EXPECT_EQ(NextN(c.expression, "UTC", Utc(2026, 1, 1), c.expected.size()), c.expected)
        << c.expression;
  }
}

TEST(CronScheduleTest, LeapDayAcrossTheCenturyThatIsNotALeapYear) {
  EXPECT_EQ(NextN("0 0 29 2 *", "UTC", Utc(2096, 3, 1), 2),
            (Times{"2104-02-29T00:00:00Z", "2108-02-29T00:00:00Z"}));
}

TEST(CronScheduleTest, TokyoHasNoDst) {
  // Asia/Tokyo is UTC+9 all year: local midnight is 15:00Z the day before.
  EXPECT_EQ(NextN("0 0 * * *", "Asia/Tokyo", Utc(2026, 3, 8), 3),
            (Times{"2026-03-08T15:00:00Z", "2026-03-09T15:00:00Z", "2026-03-10T15:00:00Z"}));
  EXPECT_EQ(NextN("30 9 * * MON", "Asia/Tokyo", Utc(2026, 1, 1), 2),
            (Times{"2026-01-05T00:30:00Z", "2026-01-12T00:30:00Z"}));
}

// America/New_York 2026: spring forward 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z);
// fall back 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z).

TEST(CronScheduleTest, NewYorkSkippedTimeFiresOnceAtTheEndOfTheGap) {
  // 02:30 does not exist on 2026-03-08: the job fires at 03:00 EDT (07:00Z), the first instant
  // after the gap, once; the next day 02:30 EDT is 06:30Z.
  EXPECT_EQ(NextN("30 2 * * *", "America/New_York", Utc(2026, 3, 7, 12), 3),
            (Times{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}));
  // Asking again from the gap-end instant does not fire the same tick again.
  EXPECT_EQ(Iso(MustMake("30 2 * * *", "America/New_York").Next(Utc(2026, 3, 8, 7))),
            "2026-03-09T06:30:00Z");
  // Every minute of the 02:xx hour is skipped: one fire at the end of the gap, not sixty.
  EXPECT_EQ(NextN("* 2 * * *", "America/New_York", Utc(2026, 3, 8, 5), 3),
            (Times{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T06:01:00Z"}));
}

TEST(CronScheduleTest, NewYorkWildcardHourSkipsTheGap) {
  // Every real half hour fires; 02:00 and 02:30 do not exist, so nothing extra is added.
  EXPECT_EQ(NextN("*/30 * * * *", "America/New_York", Utc(2026, 3, 8, 6), 4),
            (Times{"2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z",
                   "2026-03-08T08:00:00Z"}));
  // An hourly job at :30 runs at 01:30 EST and then 03:30 EDT: one real hour apart.
  EXPECT_EQ(NextN("30 * * * *", "America/New_York", Utc(2026, 3, 8, 6), 3),
            (Times{"2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z", "2026-03-08T08:30:00Z"}));
}

TEST(CronScheduleTest, NewYorkRepeatedTimeFiresOnceForAFixedHour) {
  // 01:30 happens at 05:30Z (EDT) and 06:30Z (EST): the job fires at the first only.
  EXPECT_EQ(NextN("30 1 * * *", "America/New_York", Utc(2026, 10, 31, 12), 3),
            (Times{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z", "2026-11-03T06:30:00Z"}));
  // Starting inside the second occurrence does not fire it either.
  EXPECT_EQ(Iso(MustMake("30 1 * * *", "America/New_York").Next(Utc(2026, 11, 1, 6, 10))),
            "2026-11-02T06:30:00Z");
  // Several ticks in the fixed hour: all in the first occurrence, none in the second.
  EXPECT_EQ(NextN("*/20 1 * * *", "America/New_York", Utc(2026, 11, 1, 4), 4),
            (Times{"2026-11-01T05:00:00Z", "2026-11-01T05:20:00Z", "2026-11-01T05:40:00Z",
                   "2026-11-02T06:00:00Z"}));
}

TEST(CronScheduleTest, NewYorkWildcardHourFiresInBothOccurrences) {
  EXPECT_EQ(NextN("*/30 * * * *", "America/New_York", Utc(2026, 11, 1, 4), 7),
            (Times{"2026-11-01T04:30:00Z", "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z",
                   "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z",
                   "2026-11-01T07:30:00Z"}));
  // From inside the first occurrence the second one still comes.
  EXPECT_EQ(Iso(MustMake("*/30 * * * *", "America/New_York").Next(Utc(2026, 11, 1, 5, 45))),
            "2026-11-01T06:00:00Z");
  EXPECT_EQ(NextN("0 * * * *", "America/New_York", Utc(2026, 11, 1, 3, 30), 4),
            (Times{"2026-11-01T04:00:00Z", "2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z",
                   "2026-11-01T07:00:00Z"}));
}

// Europe/Berlin 2026: spring forward 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z);
// fall back 2026-10-25 03:00 CEST -> 02:00 CET (01:00Z).

TEST(CronScheduleTest, BerlinSpringForward) {
  EXPECT_EQ(NextN("30 2 * * *", "Europe/Berlin", Utc(2026, 3, 28, 12), 3),
            (Times{"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z", "2026-03-31T00:30:00Z"}));
  EXPECT_EQ(NextN("*/30 * * * *", "Europe/Berlin", Utc(2026, 3, 29, 0), 4),
            (Times{"2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z",
                   "2026-03-29T02:00:00Z"}));
  // A daily job at 09:00 moves from 08:00Z to 07:00Z.
  EXPECT_EQ(NextN("0 9 * * *", "Europe/Berlin", Utc(2026, 3, 28), 2),
            (Times{"2026-03-28T08:00:00Z", "2026-03-29T07:00:00Z"}));
}

TEST(CronScheduleTest, BerlinFallBack) {
  // 02:30 happens at 00:30Z (CEST) and 01:30Z (CET).
  EXPECT_EQ(NextN("30 2 * * *", "Europe/Berlin", Utc(2026, 10, 24, 12), 2),
            (Times{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}));
  EXPECT_EQ(NextN("*/30 * * * *", "Europe/Berlin", Utc(2026, 10, 24, 23, 45), 6),
            (Times{"2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z",
                   "2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:30:00Z"}));
}

TEST(CronScheduleTest, DailyJobsStayOnLocalTimeAcrossAYear) {
  // 00:00 local in New York is 05:00Z in winter and 04:00Z in summer; one fire per day.
  const std::vector<sys_seconds> fires =
      MustMake("@daily", "America/New_York").NextN(Utc(2026, 1, 1), 365);
  ASSERT_EQ(fires.size(), 365u);
  for (std::size_t i = 1; i < fires.size(); ++i) {
    const auto gap = fires[i] - fires[i - 1];
    EXPECT_TRUE(gap == std::chrono::hours(24) || gap == std::chrono::hours(23) ||
                gap == std::chrono::hours(25))
        << Iso(fires[i]);
  }
  EXPECT_EQ(Iso(fires[0]), "2026-01-01T05:00:00Z");
  EXPECT_EQ(Iso(fires[200]), "2026-07-20T04:00:00Z");
}

TEST(CronScheduleTest, EndOfTheSupportedRange) {
  const CronSchedule yearly = MustMake("@yearly", "Europe/Berlin");
  EXPECT_EQ(yearly.Next(sys_seconds::max()), sys_seconds::max());
  EXPECT_EQ(Iso(yearly.Next(Utc(9998, 6, 1))), "9998-12-31T23:00:00Z");
  EXPECT_EQ(yearly.Next(Utc(9999, 6, 1)), sys_seconds::max());  // 10000-01-01 is out of range
  EXPECT_EQ(IsoList(yearly.NextN(Utc(9998, 6, 1), 5)), (Times{"9998-12-31T23:00:00Z"}));
}

TEST(CronScheduleTest, NextNCountsAndOrders) {
  const CronSchedule s = MustMake("*/7 * * * * *", "Europe/Berlin");
  const std::vector<sys_seconds> fires = s.NextN(Utc(2026, 10, 25, 0, 59), 200);
  ASSERT_EQ(fires.size(), 200u);
  for (std::size_t i = 1; i < fires.size(); ++i) EXPECT_LT(fires[i - 1], fires[i]);
  EXPECT_TRUE(s.NextN(Utc(2026, 1, 1), 0).empty());
}

TEST(CronScheduleTest, FireTimesPastTheZoneDataAreFlagged) {
  auto berlin = MustMake("30 12 * * *", "Europe/Berlin");
  EXPECT_FALSE(berlin.PastZoneData(Utc(2030, 7, 1)));
  EXPECT_FALSE(berlin.PastZoneData(Utc(2037, 7, 1)));
  // From the last transition the data knows (2037-10-25) the zone keeps CET: summer is wrong.
  EXPECT_TRUE(berlin.PastZoneData(Utc(2038, 7, 1)));
  EXPECT_TRUE(berlin.PastZoneData(Utc(2037, 12, 1)));
  // Zones without recent offset changes are right forever.
  EXPECT_FALSE(MustMake("30 12 * * *", "Asia/Tokyo").PastZoneData(Utc(2050, 7, 1)));
  EXPECT_FALSE(MustMake("30 12 * * *", "UTC").PastZoneData(Utc(2050, 7, 1)));
}

}  // namespace
}  // namespace baton::internal
