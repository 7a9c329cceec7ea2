// The loggers of include/baton/logger.h: the stderr line format (logfmt quoting), the level
// threshold, and the null logger.
#include "baton/logger.h"

#include <gtest/gtest.h>

#include <string>

namespace baton {
namespace {

std::string Captured(const std::shared_ptr<Logger>& logger, LogLevel level,
                     const std::string& message, const std::vector<LogField>& fields) {
  ::testing::internal::CaptureStderr();
  logger->Log(level, message, fields);
  return ::testing::internal::GetCapturedStderr();
}

TEST(LoggerTest, StderrLoggerWritesOneLogfmtLinePerEventAndQuotesWhatNeedsIt) {
  auto logger = NewStderrLogger();
  EXPECT_EQ(Captured(logger, LogLevel::kWarn, "worker calls failed, retrying",
                     {{"ns", "shop"},
                      {"error", "unavailable: Function not found"},
                      {"quote", "say \"hi\"\nnext"},
                      {"empty", ""},
                      NumberField("retry_in_ms", 200)}),
            "baton: warn worker calls failed, retrying ns=shop error=\"unavailable: Function "
            "not found\" quote=\"say \\\"hi\\\"\\nnext\" empty=\"\" retry_in_ms=200\n");
}

TEST(LoggerTest, StderrLoggerDropsLevelsBelowItsThreshold) {
  EXPECT_EQ(Captured(NewStderrLogger(), LogLevel::kDebug, "noise", {}), "");
  EXPECT_EQ(Captured(NewStderrLogger(LogLevel::kError), LogLevel::kWarn, "minor", {}), "");
  EXPECT_EQ(Captured(NewStderrLogger(LogLevel::kDebug), LogLevel::kDebug, "detail", {}),
            "baton: debug detail\n");
}

TEST(LoggerTest, NullLoggerWritesNothing) {
  EXPECT_EQ(Captured(NewNullLogger(), LogLevel::kError, "lost", {{"k", "v"}}), "");
}

}  // namespace
}  // namespace baton
