#include "time_arg.h"

#include <gtest/gtest.h>

namespace baton::cli {
namespace {

constexpr std::int64_t kNow = 1722500000000;  // 2024-08-01T08:13:20Z

TEST(TimeArgTest, UnixSeconds) {
  auto ms = ParseTimeArg("since", "1722489600", kNow);
  ASSERT_TRUE(ms.ok());
  EXPECT_EQ(*ms, 1722489600000);
}

TEST(TimeArgTest, SpansCountBackFromNow) {
  EXPECT_EQ(*ParseTimeArg("since", "90s", kNow), kNow - 90000);
  EXPECT_EQ(*ParseTimeArg("since", "15m", kNow), kNow - 900000);
  EXPECT_EQ(*ParseTimeArg("since", "2h", kNow), kNow - 7200000);
  EXPECT_EQ(*ParseTimeArg("since", "7d", kNow), kNow - 7 * 86400000LL);
  EXPECT_EQ(*ParseTimeArg("until", "now", kNow), kNow);
}

TEST(TimeArgTest, UtcDateTimes) {
  EXPECT_EQ(*ParseTimeArg("since", "2024-08-01T00:00:00Z", kNow), 1722470400000);
  EXPECT_EQ(*ParseTimeArg("since", "2024-08-01 12:30:00", kNow), 1722515400000);
  EXPECT_EQ(*ParseTimeArg("since", "2024-08-01T12:30", kNow), 1722515400000);
  EXPECT_EQ(*ParseTimeArg("since", "2024-08-01", kNow), 1722470400000);
}

TEST(TimeArgTest, RejectsOtherFormsNamingTheField) {
  for (const char* bad : {"", "yesterday", "2024-13-01", "2024-02-30", "12x", "-5m",
                          "2024-08-01T25:00:00Z", "2024-08-01T12:00:00+02:00"}) {
    auto ms = ParseTimeArg("until", bad, kNow);
    ASSERT_FALSE(ms.ok()) << bad;
    EXPECT_EQ(ms.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(ms.status().message().rfind("until: ", 0), 0u) << ms.status().message();
  }
}

TEST(TimeArgTest, UnixMillisecondsAreRefusedWithAHint) {
  auto ms = ParseTimeArg("since", "1722489600000", kNow);
  ASSERT_FALSE(ms.ok());
  EXPECT_EQ(ms.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ms.status().message().find("milliseconds?"), std::string::npos)
      << ms.status().message();
  // Numbers that would overflow once counted in milliseconds.
  for (const char* huge : {"9223372036854775807", "9223372036854775807s", "99999999999999d"}) {
    auto r = ParseTimeArg("until", huge, kNow);
    ASSERT_FALSE(r.ok()) << huge;
    EXPECT_EQ(r.status().message().rfind("until: ", 0), 0u) << r.status().message();
  }
}

TEST(TimeArgTest, RunAtTakesUnixSecondsInTheContractRange) {
  auto at = ParseUnixSecondsArg("at", "1722489600");
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  EXPECT_EQ(*at, 1722489600);
  auto ms = ParseUnixSecondsArg("at", "1722489600000");
  ASSERT_FALSE(ms.ok());
  EXPECT_EQ(ms.status().message(),
            "at: must be Unix seconds 946684800..4102444800 (got 1722489600000: milliseconds?)");
  for (const char* bad : {"", "0", "-5", "12x", "99999999999999999999", "4102444801"}) {
    auto r = ParseUnixSecondsArg("at", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind("at: must be Unix seconds", 0), 0u)
        << r.status().message();
  }
}

}  // namespace
}  // namespace baton::cli
