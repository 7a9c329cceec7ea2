// The "From C++" example of docs/cron.md (examples/cron_jobs.cpp, the very file the doc shows), run
// as a user would against a real redis-server: it stores a job batond can read and previews it.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cron/cron_job.h"
#include "harness/process.h"
#include "harness/redis_server.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(CronExampleTest, StoresAJobTheSchedulerCanReadAndPrintsItsNextRuns) {
  RedisServer redis;
  TempDir dir;
  const std::string log = dir.path() + "/cron.log";
  Process example({BATON_EXAMPLE_CRON, redis.url()}, log);
  ASSERT_EQ(example.Wait(30s), 0) << ReadFile(log);

  const std::vector<std::string> lines = Lines(ReadFile(log));
  ASSERT_EQ(lines.size(), 3u) << ReadFile(log);
  for (const std::string& line : lines) {
    EXPECT_EQ(line.rfind("nightly-report runs at ", 0), 0u) << line;
    EXPECT_EQ(line.substr(line.size() - 4), " UTC") << line;
  }
  // The definition batond's ticker parses (CronJob::FromJson, as it does).
  const std::string stored = redis.String({"HGET", "baton:cron", "nightly-report"});
  auto job = internal::CronJob::FromJson("nightly-report", stored);
  ASSERT_TRUE(job.ok()) << job.status().ToString() << " " << stored;
  EXPECT_EQ(job->schedule, "30 2 * * *");
  EXPECT_EQ(job->timezone, "Europe/Berlin");
  EXPECT_EQ(job->ns, "shop");
  EXPECT_EQ(job->task_type, "report");
  EXPECT_EQ(job->payload, nlohmann::json({{"kind", "daily"}}));
  EXPECT_EQ(job->missed, MissedTicks::kRunOnce);
}

TEST(CronExampleTest, AnswersHelpAndFailsCleanlyWithoutRedis) {
  TempDir dir;
  const std::string help_log = dir.path() + "/help.log";
  Process help({BATON_EXAMPLE_CRON, "--help"}, help_log);
  ASSERT_EQ(help.Wait(10s), 0);
  EXPECT_NE(ReadFile(help_log).find("usage: baton_example_cron [REDIS_URL]"), std::string::npos)
      << ReadFile(help_log);

  const std::string down_log = dir.path() + "/down.log";
  Process down({BATON_EXAMPLE_CRON, "redis://127.0.0.1:" + std::to_string(FreeLoopbackPort())},
               down_log);
  ASSERT_EQ(down.Wait(30s), 1) << ReadFile(down_log);
  EXPECT_EQ(ReadFile(down_log).rfind("unavailable: cron connect: ", 0), 0u) << ReadFile(down_log);
}

}  // namespace
}  // namespace baton::testing
