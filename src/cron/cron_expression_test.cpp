#include "cron/cron_expression.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cron/cron_test_util.h"

namespace baton::internal {
namespace {

using testing::Local;

CronExpression MustParse(std::string_view text) {
  auto parsed = CronExpression::Parse(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.status().message();
  if (!parsed.ok()) std::abort();
  return *parsed;
}

std::string Canonical(std::string_view text) { return MustParse(text).ToString(); }

TEST(CronExpressionTest, ParsesFiveFieldsToCanonicalForm) {
  EXPECT_EQ(Canonical("*/15 9-17 * * MON-FRI"), "*/15 9-17 * * 1-5");
  EXPECT_EQ(Canonical("  0   0\t* *  *  "), "0 0 * * *");
  EXPECT_EQ(Canonical("*/1 * * * *"), "* * * * *");
  EXPECT_EQ(Canonical("0 0 1-1 * *"), "0 0 1 * *");
  EXPECT_FALSE(MustParse("0 0 * * *").has_seconds_field());
}

TEST(CronExpressionTest, SixFieldsHaveALeadingSecondsField) {
  const CronExpression expr = MustParse("30 */5 * * * *");
  EXPECT_TRUE(expr.has_seconds_field());
  EXPECT_EQ(expr.ToString(), "30 */5 * * * *");
  EXPECT_TRUE(expr.Matches(Local(2026, 5, 1, 10, 5, 30)));
  EXPECT_FALSE(expr.Matches(Local(2026, 5, 1, 10, 5, 0)));
  EXPECT_FALSE(expr.Matches(Local(2026, 5, 1, 10, 6, 30)));
  // Without a seconds field a line fires at second 0 only.
  EXPECT_TRUE(MustParse("5 10 * * *").Matches(Local(2026, 5, 1, 10, 5, 0)));
  EXPECT_FALSE(MustParse("5 10 * * *").Matches(Local(2026, 5, 1, 10, 5, 1)));
}

TEST(CronExpressionTest, MonthAndDayNamesAreCaseInsensitive) {
  EXPECT_EQ(Canonical("0 0 1 jan,Jul,DEC *"), "0 0 1 1,7,12 *");
  EXPECT_EQ(Canonical("0 0 * * sun,Sat"), "0 0 * * 0,6");
  EXPECT_EQ(Canonical("0 0 * FEB-apr wed-FRI"), "0 0 * 2-4 3-5");
  EXPECT_EQ(MustParse("0 0 * * tue"), MustParse("0 0 * * 2"));
}

TEST(CronExpressionTest, SevenIsSunday) {
  EXPECT_EQ(MustParse("0 0 * * 7"), MustParse("0 0 * * 0"));
  EXPECT_EQ(MustParse("0 0 * * SUN"), MustParse("0 0 * * 7"));
  const CronExpression expr = MustParse("0 12 * * 5-7");  // Fri, Sat, Sun
  EXPECT_EQ(expr.ToString(), "0 12 * * 5-7");
  EXPECT_TRUE(expr.Matches(Local(2026, 1, 2, 12)));   // Friday
  EXPECT_TRUE(expr.Matches(Local(2026, 1, 4, 12)));   // Sunday
  EXPECT_FALSE(expr.Matches(Local(2026, 1, 5, 12)));  // Monday
  // a/n runs to 7 in day-of-week, so `1/2` is Mon, Wed, Fri and Sun (as cronie and croniter).
  const CronExpression odd = MustParse("0 0 * * 1/2");
  EXPECT_TRUE(odd.Matches(Local(2026, 1, 4)));   // Sunday
  EXPECT_FALSE(odd.Matches(Local(2026, 1, 3)));  // Saturday
}

TEST(CronExpressionTest, QuestionMarkIsAWildcardInDayFields) {
  EXPECT_EQ(Canonical("0 0 ? * MON"), "0 0 * * 1");
  EXPECT_EQ(Canonical("0 0 1 * ?"), "0 0 1 * *");
  EXPECT_EQ(MustParse("0 0 ? * MON"), MustParse("0 0 * * 1"));
}

TEST(CronExpressionTest, MacrosExpand) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
      {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
      {"@hourly", "0 * * * *"}, {"@DAILY", "0 0 * * *"},    {" @hourly ", "0 * * * *"},
  };
  for (const auto& [macro, expansion] : cases) {
    EXPECT_EQ(Canonical(macro), expansion) << macro;
    EXPECT_EQ(MustParse(macro), MustParse(expansion)) << macro;
  }
}

TEST(CronExpressionTest, StepsAndRanges) {
  const CronExpression expr = MustParse("5/15 10-20/5 * * *");
  EXPECT_EQ(expr.ToString(), "5/15 10-20/5 * * *");
  for (int minute : {5, 20, 35, 50}) {
    EXPECT_TRUE(expr.Matches(Local(2026, 1, 1, 15, minute))) << minute;
  }
  EXPECT_FALSE(expr.Matches(Local(2026, 1, 1, 15, 0)));
  EXPECT_FALSE(expr.Matches(Local(2026, 1, 1, 16, 5)));
  EXPECT_TRUE(expr.Matches(Local(2026, 1, 1, 10, 5)));
  EXPECT_TRUE(expr.Matches(Local(2026, 1, 1, 20, 50)));
  EXPECT_FALSE(expr.Matches(Local(2026, 1, 1, 21, 5)));
  EXPECT_EQ(Canonical("0,30 1,2-4,*/12 * * *"), "0,30 1,2-4,*/12 * * *");
}

TEST(CronExpressionTest, CanonicalFormRoundTrips) {
  for (const char* text :
       {"*/15 9-17 * * MON-FRI", "0 0 ? * 7", "@weekly", "15 */2 1,15 jan-mar,dec *",
        "*/10 * * * * *", "0 0 */10 * 1", "0 0 13 * 5", "5/15 3/4 * * *", "0 0 * * 1-7/2",
        "0 0-23/1 * * *", "59 59 23 31 12 6"}) {
    const CronExpression expr = MustParse(text);
    const CronExpression again = MustParse(expr.ToString());
    EXPECT_EQ(again, expr) << text << " -> " << expr.ToString();
    EXPECT_EQ(again.ToString(), expr.ToString()) << text;
  }
}

// Vixie cron: when both day fields are restricted, a day matches if EITHER matches; when either
// starts with `*` (including `*/n`), both must match.
TEST(CronExpressionTest, DayOfMonthAndDayOfWeekFollowTheVixieRule) {
  const CronExpression either = MustParse("0 0 13 * 5");  // the 13th or any Friday
  EXPECT_TRUE(either.Matches(Local(2026, 1, 13)));        // Tuesday the 13th
  EXPECT_TRUE(either.Matches(Local(2026, 2, 6)));         // Friday the 6th
  EXPECT_FALSE(either.Matches(Local(2026, 1, 14)));       // Wednesday the 14th

  const CronExpression both = MustParse("0 0 */10 * 1");  // days 1,11,21,31 that are Mondays
  EXPECT_FALSE(both.Matches(Local(2026, 1, 11)));         // Sunday the 11th
  EXPECT_FALSE(both.Matches(Local(2026, 1, 5)));          // Monday the 5th
  EXPECT_TRUE(both.Matches(Local(2026, 5, 11)));          // Monday the 11th
  EXPECT_EQ(both.NextMatch(Local(2026, 1, 1), Local(2027, 1, 1)), Local(2026, 5, 11));

  const CronExpression dom_only = MustParse("0 0 13 * *");
  EXPECT_TRUE(dom_only.Matches(Local(2026, 1, 13)));
  EXPECT_FALSE(dom_only.Matches(Local(2026, 2, 6)));
  const CronExpression dow_only = MustParse("0 0 ? * FRI");
  EXPECT_FALSE(dow_only.Matches(Local(2026, 1, 13)));
  EXPECT_TRUE(dow_only.Matches(Local(2026, 2, 6)));
}

TEST(CronExpressionTest, HourWildcardMeansStarOrStep) {
  EXPECT_TRUE(MustParse("0 * * * *").hour_is_wildcard());
  EXPECT_TRUE(MustParse("*/15 * * * *").hour_is_wildcard());
  EXPECT_TRUE(MustParse("0 */2 * * *").hour_is_wildcard());
  EXPECT_TRUE(MustParse("0 0-23/3 * * *").hour_is_wildcard());
  EXPECT_TRUE(MustParse("0 1,*/6 * * *").hour_is_wildcard());
  EXPECT_TRUE(MustParse("@hourly").hour_is_wildcard());
  EXPECT_FALSE(MustParse("0 3 * * *").hour_is_wildcard());
  EXPECT_FALSE(MustParse("* 3 * * *").hour_is_wildcard());
  EXPECT_FALSE(MustParse("0 1,13 * * *").hour_is_wildcard());
  EXPECT_FALSE(MustParse("0 9-17 * * *").hour_is_wildcard());
  EXPECT_FALSE(MustParse("@daily").hour_is_wildcard());
}

TEST(CronExpressionTest, NextMatchSkipsByField) {
  const CronExpression leap = MustParse("0 0 29 2 *");
  EXPECT_EQ(leap.NextMatch(Local(2026, 3, 1), Local(2100, 1, 1)), Local(2028, 2, 29));
  EXPECT_EQ(leap.NextMatch(Local(2028, 2, 29), Local(2100, 1, 1)), Local(2028, 2, 29));
  EXPECT_EQ(leap.NextMatch(Local(2028, 2, 29, 0, 0, 1), Local(2100, 1, 1)), Local(2032, 2, 29));
  EXPECT_EQ(leap.NextMatch(Local(2096, 3, 1), Local(2200, 1, 1)), Local(2104, 2, 29));  // 2100
  EXPECT_EQ(leap.NextMatch(Local(2026, 3, 1), Local(2028, 2, 29)), std::nullopt);  // `until` excl.

  const CronExpression last_second = MustParse("59 59 23 31 12 *");
  EXPECT_EQ(last_second.NextMatch(Local(2026, 1, 1), Local(2030, 1, 1)),
            Local(2026, 12, 31, 23, 59, 59));
  const CronExpression every_second = MustParse("* * * * * *");
  EXPECT_EQ(every_second.NextMatch(Local(2026, 12, 31, 23, 59, 59), Local(2030, 1, 1)),
            Local(2026, 12, 31, 23, 59, 59));
}

struct ErrorCase {
  const char* text;
  const char* message;
};

TEST(CronExpressionTest, ErrorsNameTheFieldAndTheRule) {
  const std::vector<ErrorCase> cases = {
      {"", "schedule: empty expression"},
      {"   ", "schedule: empty expression"},
      {"* * *", "schedule: expected 5 or 6 fields, got 3"},
      {"* * * * * * *", "schedule: expected 5 or 6 fields, got 7"},
      {"61 * * * *", "schedule: minute: 61 is out of range 0..59"},
      {"60 * * * * *", "schedule: second: 60 is out of range 0..59"},
      {"0 24 * * *", "schedule: hour: 24 is out of range 0..23"},
      {"0 0 0 * *", "schedule: day-of-month: 0 is out of range 1..31"},
      {"0 0 32 * *", "schedule: day-of-month: 32 is out of range 1..31"},
      {"0 0 1 13 *", "schedule: month: 13 is out of range 1..12"},
      {"0 0 * * 8", "schedule: day-of-week: 8 is out of range 0..7"},
      {"99999999999 * * * *", "schedule: minute: 99999999999 is out of range 0..59"},
      {"0 0 * * FUNDAY", "schedule: day-of-week: unknown name \"FUNDAY\""},
      {"0 0 * * MONDAY", "schedule: day-of-week: unknown name \"MONDAY\""},
      {"0 0 1 FOO *", "schedule: month: unknown name \"FOO\""},
      {"0 0 * JAN-FOO *", "schedule: month: unknown name \"FOO\""},
      {"x * * * *",
       "schedule: minute: \"x\" is not a number (names are allowed only in month and day-of-week)"},
      {"1x * * * *", "schedule: minute: \"1x\" is not a number"},
      {"*/0 * * * *", "schedule: minute: step 0 is out of range 1..60"},
      {"0 0-23/0 * * *", "schedule: hour: step 0 is out of range 1..24"},
      {"0 0 * * */8", "schedule: day-of-week: step 8 is out of range 1..7"},
      {"*/x * * * *", "schedule: minute: step \"x\" is not a number"},
      {"*/ * * * *", "schedule: minute: step \"\" is not a number"},
      {"0 5-3 * * *", "schedule: hour: range 5-3 is reversed (the start must not exceed the end)"},
      {"0 0 * * FRI-MON",
       "schedule: day-of-week: range FRI-MON is reversed (the start must not exceed the end)"},
      {"1- * * * *", "schedule: minute: \"1-\" is malformed (a range is a-b)"},
      {"-1 * * * *", "schedule: minute: \"-1\" is malformed (a range is a-b)"},
      {"/5 * * * *",
       "schedule: minute: \"/5\" is malformed (expected *, a value, a-b, */n, a-b/n or a/n)"},
      {"1,,2 * * * *", "schedule: minute: empty list element in \"1,,2\""},
      {"1, * * * *", "schedule: minute: empty list element in \"1,\""},
      {"? * * * *", "schedule: minute: \"?\" is allowed only in day-of-month and day-of-week"},
      {"0 0 1,? * *", "schedule: day-of-month: \"?\" must be the whole field"},
      {"0 0 30 2 *",
       "schedule: day-of-month: none of the selected days exists in the selected months"},
      {"0 0 31 4,6,9,11 *",
       "schedule: day-of-month: none of the selected days exists in the selected months"},
      {"@fortnightly",
       "schedule: unknown macro \"@fortnightly\" (expected @yearly, @annually, @monthly, "
       "@weekly, @daily, @midnight or @hourly)"},
      {"@reboot", "schedule: @reboot is not supported (a scheduler has no boot event)"},
      {"@daily 5", "schedule: a macro (@daily) must be the whole line"},
  };
  for (const ErrorCase& c : cases) {
    auto parsed = CronExpression::Parse(c.text);
    ASSERT_FALSE(parsed.ok()) << "accepted: \"" << c.text << "\"";
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_EQ(parsed.status().message(), c.message) << c.text;
  }
}

TEST(CronExpressionTest, ImpossibleDayIsAcceptedWhenTheWeekdayCanMatch) {
  // Both day fields restricted: the OR rule lets Mondays fire although Feb 30 never exists.
  const CronExpression expr = MustParse("0 0 30 2 MON");
  EXPECT_EQ(expr.NextMatch(Local(2026, 2, 1), Local(2027, 1, 1)), Local(2026, 2, 2));
  // Feb 29 alone is possible (leap years).
  EXPECT_TRUE(CronExpression::Parse("0 0 29 2 *").ok());
  EXPECT_TRUE(CronExpression::Parse("0 0 31 1-3 *").ok());
}

}  // namespace
}  // namespace baton::internal
