#include "cron/cron_due.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cron/cron_test_util.h"

namespace baton::internal {
namespace {

using std::chrono::seconds;
using testing::IsoList;
using testing::Utc;
using Times = std::vector<std::string>;

CronSchedule MustMake(std::string_view expression) {
  auto expr = CronExpression::Parse(expression);
  if (!expr.ok()) std::abort();
  auto schedule = CronSchedule::Make(*expr, "UTC");
  if (!schedule.ok()) std::abort();
  return *schedule;
}

TEST(CronDueTest, OnTimeTicksAreAllReturned) {
  const CronSchedule every_10s = MustMake("*/10 * * * * *");
  // A pass 25 s after the last one sees the ticks at :10, :20 (on time with a 60 s grace).
  EXPECT_EQ(IsoList(DueTicks(every_10s, MissedTickPolicy::kSkip, Utc(2026, 1, 1, 0, 0, 0),
                             Utc(2026, 1, 1, 0, 0, 25), seconds(60))),
            (Times{"2026-01-01T00:00:10Z", "2026-01-01T00:00:20Z"}));
  // A tick exactly at `now` is due; one exactly at handled_until was already handled.
  EXPECT_EQ(IsoList(DueTicks(every_10s, MissedTickPolicy::kSkip, Utc(2026, 1, 1, 0, 0, 10),
                             Utc(2026, 1, 1, 0, 0, 20), seconds(60))),
            (Times{"2026-01-01T00:00:20Z"}));
}

TEST(CronDueTest, NothingIsDueWhenTimeDidNotAdvance) {
  const CronSchedule s = MustMake("* * * * * *");
  EXPECT_TRUE(
      DueTicks(s, MissedTickPolicy::kRunOnce, Utc(2026, 1, 1, 1), Utc(2026, 1, 1, 1), seconds(60))
          .empty());
  EXPECT_TRUE(DueTicks(s, MissedTickPolicy::kRunOnce, Utc(2026, 1, 1, 1), Utc(2026, 1, 1, 0, 59),
                       seconds(60))
                  .empty());
}

TEST(CronDueTest, SkipDropsMissedTicks) {
  // Down from 00:00 to 05:00:30 with an hourly job: 01:00 .. 05:00 came due; only 05:00 is within
  // the 60 s grace.
  const CronSchedule hourly = MustMake("@hourly");
  EXPECT_EQ(IsoList(DueTicks(hourly, MissedTickPolicy::kSkip, Utc(2026, 1, 1),
                             Utc(2026, 1, 1, 5, 0, 30), seconds(60))),
            (Times{"2026-01-01T05:00:00Z"}));
  EXPECT_TRUE(DueTicks(hourly, MissedTickPolicy::kSkip, Utc(2026, 1, 1), Utc(2026, 1, 1, 5, 30),
                       seconds(60))
                  .empty());
}

TEST(CronDueTest, RunOnceFiresOneTaskForAllMissedTicks) {
  const CronSchedule hourly = MustMake("@hourly");
  // Missed 01:00 .. 04:00: one task, identified by the first missed tick; 05:00 is on time.
  EXPECT_EQ(IsoList(DueTicks(hourly, MissedTickPolicy::kRunOnce, Utc(2026, 1, 1),
                             Utc(2026, 1, 1, 5, 0, 30), seconds(60))),
            (Times{"2026-01-01T01:00:00Z", "2026-01-01T05:00:00Z"}));
  EXPECT_EQ(IsoList(DueTicks(hourly, MissedTickPolicy::kRunOnce, Utc(2026, 1, 1),
                             Utc(2026, 1, 1, 5, 30), seconds(60))),
            (Times{"2026-01-01T01:00:00Z"}));
  // A per-second job down for a month costs one Next call for the missed part, not millions.
  const CronSchedule every_second = MustMake("* * * * * *");
  EXPECT_EQ(IsoList(DueTicks(every_second, MissedTickPolicy::kRunOnce, Utc(2026, 1, 1),
                             Utc(2026, 2, 1), seconds(2))),
            (Times{"2026-01-01T00:00:01Z", "2026-01-31T23:59:59Z", "2026-02-01T00:00:00Z"}));
  // Nothing missed: run_once behaves like skip.
  EXPECT_EQ(IsoList(DueTicks(hourly, MissedTickPolicy::kRunOnce, Utc(2026, 1, 1, 4, 59, 50),
                             Utc(2026, 1, 1, 5, 0, 5), seconds(60))),
            (Times{"2026-01-01T05:00:00Z"}));
}

}  // namespace
}  // namespace baton::internal
