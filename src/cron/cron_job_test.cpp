#include "cron/cron_job.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cron/cron_test_util.h"

namespace baton::internal {
namespace {

using nlohmann::json;
using testing::Utc;

constexpr const char* kFull = R"({
  "schedule": "0 9 * * MON-FRI",
  "timezone": "Europe/Berlin",
  "namespace": "billing",
  "task_type": "invoice.send",
  "payload": {"batch": 7, "dry_run": false},
  "max_retry": 5,
  "enabled": false,
  "missed": "run_once",
  "execution_timeout": 300
})";

TEST(CronJobTest, ParsesEveryField) {
  auto job = CronJob::FromJson("daily-invoices", kFull);
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_EQ(job->name, "daily-invoices");
  EXPECT_EQ(job->schedule, "0 9 * * MON-FRI");
  EXPECT_EQ(job->timezone, "Europe/Berlin");
  EXPECT_EQ(job->ns, "billing");
  EXPECT_EQ(job->task_type, "invoice.send");
  EXPECT_EQ(job->payload, json({{"batch", 7}, {"dry_run", false}}));
  EXPECT_EQ(job->max_retry, 5);
  EXPECT_FALSE(job->enabled);
  EXPECT_EQ(job->missed, MissedTickPolicy::kRunOnce);
  EXPECT_EQ(job->execution_timeout, 300);
}

TEST(CronJobTest, DefaultsApplyToOptionalFields) {
  auto job =
      CronJob::FromJson("tick", R"({"schedule":"@hourly","namespace":"ops","task_type":"ping"})");
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_EQ(job->timezone, "UTC");
  EXPECT_EQ(job->payload, json::object());
  EXPECT_EQ(job->max_retry, 3);
  EXPECT_TRUE(job->enabled);
  EXPECT_EQ(job->missed, MissedTickPolicy::kSkip);
  EXPECT_FALSE(job->execution_timeout.has_value());
}

// Found by the fuzzers (tests/fuzz): a definition nested 100,000 deep in baton:cron overflowed the
// stack of every batond that read it.
TEST(CronJobTest, DeeplyNestedDefinitionIsRefusedNotACrash) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto job = CronJob::FromJson(
      "deep", R"({"schedule":"@hourly","namespace":"ops","task_type":"ping","payload":{"a":)" +
                  deep + "}}");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().message(),
            "definition: must not nest arrays and objects deeper than 256 levels");
}

TEST(CronJobTest, ToJsonRoundTrips) {
  auto job = CronJob::FromJson("daily-invoices", kFull);
  ASSERT_TRUE(job.ok());
  const std::string text = job->ToJson();
  auto again = CronJob::FromJson("daily-invoices", text);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, *job);
  const json object = json::parse(text);
  EXPECT_EQ(object["missed"], "run_once");
  EXPECT_EQ(object["namespace"], "billing");
  EXPECT_FALSE(object.contains("name"));  // the name is the hash field

  CronJob minimal;
  minimal.name = "m";
  minimal.schedule = "* * * * *";
  minimal.ns = "n";
  minimal.task_type = "t";
  EXPECT_FALSE(json::parse(minimal.ToJson()).contains("execution_timeout"));
  auto parsed = CronJob::FromJson("m", minimal.ToJson());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, minimal);
}

struct ErrorCase {
  std::string name;
  std::string json;
  std::string message;
};

TEST(CronJobTest, ErrorsNameTheFieldAndTheRule) {
  const std::string base = R"("schedule":"* * * * *","namespace":"ns","task_type":"t")";
  const std::vector<ErrorCase> cases = {
      {"job", "not json", "definition: must be valid JSON"},
      {"job", "[1,2]", "definition: must be a JSON object"},
      {"job", R"({"namespace":"ns","task_type":"t"})", "schedule: required"},
      {"job", R"({"schedule":"* * * * *","task_type":"t"})", "namespace: required"},
      {"job", R"({"schedule":"* * * * *","namespace":"ns"})", "task_type: required"},
      {"job", "{" + base + R"(,"timezon":"Europe/Berlin"})", "timezon: unknown field"},
      {"bad name", "{" + base + "}", "name: must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"},
      {"job:1", "{" + base + "}", "name: must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"},
      {std::string(65, 'a'), "{" + base + "}",
       "name: must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"},
      {"job", R"({"schedule":"61 * * * *","namespace":"ns","task_type":"t"})",
       "schedule: minute: 61 is out of range 0..59"},
      {"job", R"({"schedule":5,"namespace":"ns","task_type":"t"})",
       "schedule: must be a string (got 5)"},
      {"job", "{" + base + R"(,"timezone":"Mars/Base"})",
       "timezone: unknown IANA time zone \"Mars/Base\""},
      {"job", R"({"schedule":"* * * * *","namespace":"a b","task_type":"t"})",
       "namespace: must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"},
      {"job", R"({"schedule":"* * * * *","namespace":"ns","task_type":"_t"})",
       "task_type: must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"},
      {"job", "{" + base + R"(,"payload":[1]})", "payload: must be a JSON object"},
      {"job", "{" + base + R"(,"max_retry":26})", "max_retry: must be an integer 0..25 (got 26)"},
      {"job", "{" + base + R"(,"max_retry":-1})", "max_retry: must be an integer 0..25 (got -1)"},
      {"job", "{" + base + R"(,"max_retry":"3"})",
       "max_retry: must be an integer 0..25 (got \"3\")"},
      {"job", "{" + base + R"(,"max_retry":1.5})", "max_retry: must be an integer 0..25 (got 1.5)"},
      {"job", "{" + base + R"(,"enabled":"yes"})", "enabled: must be true or false (got \"yes\")"},
      {"job", "{" + base + R"(,"missed":"all"})",
       "missed: must be \"skip\" or \"run_once\" (got \"all\")"},
      {"job", "{" + base + R"(,"execution_timeout":0})",
       "execution_timeout: must be an integer 1..86400 (got 0)"},
      {"job", "{" + base + R"(,"execution_timeout":86401})",
       "execution_timeout: must be an integer 1..86400 (got 86401)"},
      {"job", "{" + base + R"(,"execution_timeout":18446744073709551615})",
       "execution_timeout: must be an integer 1..86400 (got 18446744073709551615)"},
  };
  for (const ErrorCase& c : cases) {
    auto job = CronJob::FromJson(c.name, c.json);
    ASSERT_FALSE(job.ok()) << "accepted: " << c.json;
    EXPECT_EQ(job.status().code(), StatusCode::kInvalidArgument) << c.json;
    EXPECT_EQ(job.status().message(), c.message) << c.json;
  }
}

TEST(CronJobTest, PayloadSizeIsLimited) {
  CronJob job;
  job.name = "big";
  job.schedule = "@daily";
  job.ns = "ns";
  job.task_type = "t";
  job.payload = {{"blob", std::string(kMaxPayloadBytes, 'x')}};
  const Status status = job.Validate();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message().rfind("payload: must be at most 524288 bytes serialized", 0), 0u)
      << status.message();
  job.payload = {{"blob", std::string(kMaxPayloadBytes - 20, 'x')}};
  EXPECT_TRUE(job.Validate().ok());
}

TEST(CronJobTest, NullExecutionTimeoutMeansNone) {
  auto job = CronJob::FromJson(
      "j", R"({"schedule":"@daily","namespace":"n","task_type":"t","execution_timeout":null})");
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_FALSE(job->execution_timeout.has_value());
}

TEST(CronJobTest, MakeScheduleUsesTheZone) {
  auto job = CronJob::FromJson("daily-invoices", kFull);
  ASSERT_TRUE(job.ok());
  auto schedule = job->MakeSchedule();
  ASSERT_TRUE(schedule.ok());
  EXPECT_EQ(schedule->timezone(), "Europe/Berlin");
  // Monday 2026-01-05 09:00 CET is 08:00Z.
  EXPECT_EQ(schedule->Next(Utc(2026, 1, 3)), Utc(2026, 1, 5, 8));
}

TEST(CronJobTest, TickTaskIdIsDeterministicAndValid) {
  CronJob job;
  job.name = "daily-invoices";
  EXPECT_EQ(TickTaskId(job, Utc(2026, 1, 5, 8)), "cron:daily-invoices:1767600000");
  EXPECT_EQ(TickTaskId(job, Utc(2026, 1, 5, 8)), TickTaskId(job, Utc(2026, 1, 5, 8)));
  EXPECT_NE(TickTaskId(job, Utc(2026, 1, 5, 8)), TickTaskId(job, Utc(2026, 1, 6, 8)));
  // The longest name and a far fire time still make a valid task id.
  job.name = "A" + std::string(63, '.');
  ASSERT_TRUE(IsValidName(job.name));
  EXPECT_TRUE(IsValidTaskId(TickTaskId(job, Utc(2099, 12, 31, 23, 59, 59))));
}

TEST(CronJobTest, TickTaskCarriesTheJobFields) {
  auto job = CronJob::FromJson("daily-invoices", kFull);
  ASSERT_TRUE(job.ok());
  const Task task = TickTask(*job, Utc(2026, 1, 5, 8));
  EXPECT_EQ(task.task_id, "cron:daily-invoices:1767600000");
  EXPECT_EQ(task.ns, "billing");
  EXPECT_EQ(task.task_type, "invoice.send");
  EXPECT_EQ(json::parse(task.payload_json), job->payload);
  EXPECT_EQ(task.max_retry, 5);
  EXPECT_EQ(task.execution_timeout, 300);
  EXPECT_EQ(task.created_at, 1767600000);
  EXPECT_EQ(task.delay_seconds, 0);
  EXPECT_TRUE(task.Validate().ok()) << task.Validate().message();
  // Two schedulers build the same document for the same tick.
  EXPECT_EQ(task.ToJson(), TickTask(*job, Utc(2026, 1, 5, 8)).ToJson());
}

}  // namespace
}  // namespace baton::internal
