// Differential tests, both through /usr/bin/python3 (scripts beside this file):
//  - against croniter (Debian's python3-croniter, croniter_reference.py) in zones without DST
//    (UTC, Asia/Tokyo): across DST changes croniter follows its own policy, not Baton's;
//  - against a minute-by-minute brute force of Baton's documented DST policy (dst_reference.py,
//    Python's zoneinfo on the same system tzdata) around every 2026 offset change of seven zones.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cron/cron_schedule.h"
#include "cron/cron_test_util.h"

namespace baton::internal {
namespace {

using std::chrono::sys_seconds;

constexpr int kCount = 50;

// Expressions on which Baton and croniter agree. Left out on purpose:
//  - `*/n` in one day field while the other is restricted ("0 0 */10 * 1", "0 0 1 * */2"):
//    Baton follows Vixie cron (a day field starting with `*` means both must match, AND);
//    croniter 1.3.5 treats `*/n` as restricted and ORs the two fields.
//  - `?` ("0 0 ? * MON"): croniter 1.3.5 rejects it; Baton reads it as `*`.
//  - days that never occur ("0 0 30 2 *"): croniter fails while iterating; Baton rejects the line.
//  - DST zones: see docs/cron.md; croniter has its own DST handling.
const std::vector<std::string> kExpressions = {
    "* * * * *",        "*/5 * * * *",
    "*/7 * * * *",      "5/15 * * * *",
    "1-5 * * * *",      "0 * * * *",
    "15,45 */2 * * *",  "0 9-17 * * 1-5",
    "30 8 * * MON-FRI", "0 22 * * 1-5",
    "45 23 * * 6",      "0 3 * * SAT",
    "0 0 * * 0",        "0 0 * * 7",
    "0 12 * * 5-7",     "0 0 * * */3",
    "0 0 * * 1/2",      "0 */4 * * 6,0",
    "0 0 1 * *",        "0 0 29 * *",
    "0 0 30 * *",       "0 0 31 * *",
    "0 0 28-31 * *",    "0 0 29 2 *",
    "0 0 1 1 *",        "0 0 1 */3 *",
    "0 0 1 jan,jul *",  "0 0 * 2 *",
    "0 10 * 6-8 MON",   "0 0 13 * 5",
    "0 0 1,15 * 1",     "23 4 1-7 * *",
    "0 4 8-14 * *",     "0 0 1-10/3 * *",
    "59 23 31 12 *",    "*/10 * * * * *",
    "30 0 12 * * *",    "0,15,30,45 * * * * *",
    "0 5 0 * 8 *",      "0 0 0 29 2 *",
    "@hourly",          "@daily",
    "@weekly",          "@monthly",
    "@yearly",
};

bool CroniterAvailable() {
  return std::system("/usr/bin/python3 -c 'import croniter' >/dev/null 2>&1") == 0;
}

// Runs `/usr/bin/python3 <script> <args>` with one expression per input line; returns the output
// lines split at tabs.
std::vector<std::vector<std::string>> RunScript(const std::string& script, const std::string& args,
                                                const std::vector<std::string>& expressions) {
  std::vector<std::vector<std::string>> rows;
  char path[] = "/tmp/baton_cron_expressions_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) {
    ADD_FAILURE() << "mkstemp failed";
    return rows;
  }
  ::close(fd);
  {
    std::ofstream out(path);
    for (const std::string& e : expressions) out << e << "\n";
  }
  const std::string command = "/usr/bin/python3 " + script + " " + args + " < " + path;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed: " << command;
    std::remove(path);
    return rows;
  }
  std::string output;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = ::pclose(pipe);
  std::remove(path);
  EXPECT_EQ(status, 0) << "reference script failed: " << command;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string>& row = rows.emplace_back();
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, '\t');) row.push_back(cell);
  }
  return rows;
}

std::vector<long long> ParseTimes(const std::string& text) {
  std::vector<long long> out;
  std::istringstream in(text);
  for (long long t; in >> t;) out.push_back(t);
  return out;
}

std::vector<std::string> IsoTimes(const std::vector<long long>& times) {
  std::vector<std::string> out;
  for (long long t : times) out.push_back(testing::Iso(sys_seconds{std::chrono::seconds{t}}));
  return out;
}

CronSchedule MustMake(const std::string& text, const std::string& zone) {
  auto expression = CronExpression::Parse(text);
  EXPECT_TRUE(expression.ok()) << text << ": " << expression.status().message();
  if (!expression.ok()) std::abort();
  auto schedule = CronSchedule::Make(*expression, zone);
  EXPECT_TRUE(schedule.ok()) << schedule.status().message();
  if (!schedule.ok()) std::abort();
  return *schedule;
}

// Baton's next kCount fire times after `start` against croniter's.
void CompareWithCroniter(sys_seconds start, const std::string& zone) {
  const auto rows = RunScript(
      BATON_CRON_SOURCE_DIR "/croniter_reference.py",
      std::to_string(start.time_since_epoch().count()) + " " + std::to_string(kCount) + " " + zone,
      kExpressions);
  ASSERT_EQ(rows.size(), kExpressions.size()) << "the script answered for fewer lines";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 2u);
    ASSERT_EQ(rows[i][0], kExpressions[i]);
    const CronSchedule schedule = MustMake(kExpressions[i], zone);
    EXPECT_EQ(testing::IsoList(schedule.NextN(start, kCount)), IsoTimes(ParseTimes(rows[i][1])))
        << "expression \"" << kExpressions[i] << "\" in " << zone << " after "
        << testing::Iso(start);
  }
}

// Expressions for the DST check: 5 fields, no `*/n` in a day field (see dst_reference.py).
const std::vector<std::string> kDstExpressions = {
    "30 2 * * *",   "30 1 * * *",      "0 0 * * *",      "30 0 * * *",   "*/30 * * * *",
    "*/15 * * * *", "0 * * * *",       "30 * * * *",     "* 2 * * *",    "*/20 1 * * *",
    "0 1-3 * * *",  "15 0-23/2 * * *", "0,30 1,2 * * *", "45 2 * * 0",   "0 3 * * *",
    "59 1 * * *",   "0 2 * * *",       "*/7 2 * * *",    "10 */3 * * *", "0 23 * * *",
    "5 0 * * 6,0",  "0 0 1,15 * 0",
};

// Baton's fire times around every offset change of `zone` in 2026 against a minute-by-minute
// brute force of the documented DST policy.
void CompareWithDstBruteForce(const std::string& zone) {
  const auto rows =
      RunScript(BATON_CRON_SOURCE_DIR "/dst_reference.py", zone + " 2026", kDstExpressions);
  ASSERT_GE(rows.size(), kDstExpressions.size()) << zone << ": no offset change found in 2026";
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 4u);
    const sys_seconds start{std::chrono::seconds{std::stoll(row[1])}};
    const sys_seconds end{std::chrono::seconds{std::stoll(row[2])}};
    const CronSchedule schedule = MustMake(row[0], zone);
    std::vector<std::string> ours;
    for (auto t = schedule.Next(start - std::chrono::seconds{1}); t < end; t = schedule.Next(t)) {
      ours.push_back(testing::Iso(t));
    }
    EXPECT_EQ(ours, IsoTimes(ParseTimes(row[3])))
        << "expression \"" << row[0] << "\" in " << zone << " from " << testing::Iso(start);
  }
}

class CronDifferentialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CroniterAvailable()) {
      GTEST_SKIP() << "/usr/bin/python3 cannot import croniter (install python3-croniter); "
                      "skipping the comparison with croniter";
    }
  }
};

TEST_F(CronDifferentialTest, UtcFromNewYear) {
  CompareWithCroniter(testing::Utc(2026, 1, 1), "UTC");
}

TEST_F(CronDifferentialTest, UtcFromAnOddInstant) {
  CompareWithCroniter(testing::Utc(2027, 6, 15, 13, 37, 42), "UTC");
}

TEST_F(CronDifferentialTest, UtcFromTheEveOfALeapDay) {
  CompareWithCroniter(testing::Utc(2028, 2, 28, 23, 59, 59), "UTC");
}

TEST_F(CronDifferentialTest, TokyoHasNoDst) {
  CompareWithCroniter(testing::Utc(2026, 3, 7, 16, 5, 0), "Asia/Tokyo");
}

// Zones with DST in both hemispheres, a 30-minute shift (Lord Howe), an offset of +12:45/+13:45
// (Chatham) and changes at local midnight (Santiago, Havana).
TEST_F(CronDifferentialTest, DstPolicyAgainstBruteForce) {
  for (const char* zone :
       {"America/New_York", "Europe/Berlin", "Australia/Sydney", "Australia/Lord_Howe",
        "Pacific/Chatham", "America/Santiago", "America/Havana"}) {
    CompareWithDstBruteForce(zone);
  }
}

}  // namespace
}  // namespace baton::internal
