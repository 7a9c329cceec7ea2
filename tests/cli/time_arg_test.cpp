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

}  // namespace
}  // namespace baton::cli
