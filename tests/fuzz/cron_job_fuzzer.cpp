// Cron job definitions as batond reads them from the hash baton:cron (src/cron/cron_job.h): the
// first input line is the job name (the hash field), the rest the JSON definition (the value).
// Properties:
//  - a rejected definition gets kInvalidArgument "<field>: <rule>";
//  - an accepted one validates, FromJson(ToJson()) gives the same job, and the task of its next
//    tick (TickTask) passes the task contract.
#include <chrono>
#include <string>

#include "cron/cron_job.h"
#include "fuzz_check.h"
#include "fuzz_targets.h"

namespace baton::fuzz {
namespace {

const std::initializer_list<std::string_view> kJobFields = {
    "definition", "name",      "schedule", "timezone", "namespace",        "task_type",
    "payload",    "max_retry", "enabled",  "missed",   "execution_timeout"};

bool IsUnknownFieldError(const Status& status) {
  constexpr std::string_view kRule = ": unknown field";
  const std::string& message = status.message();
  return status.code() == StatusCode::kInvalidArgument && message.size() >= kRule.size() &&
         message.compare(message.size() - kRule.size(), kRule.size(), kRule) == 0;
}

}  // namespace

int FuzzCronJob(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = AsText(data, size);
  const std::size_t newline = text.find('\n');
  const std::string_view name = text.substr(0, newline);
  const std::string_view definition =
      newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);

  StatusOr<internal::CronJob> job = internal::CronJob::FromJson(name, definition);
  if (!job.ok()) {
    BATON_FUZZ_CHECK(NamesAField(job.status(), kJobFields) || IsUnknownFieldError(job.status()),
                     job.status().ToString());
    return 0;
  }
  BATON_FUZZ_CHECK(job->Validate().ok(), job->Validate().ToString());

  const std::string written = job->ToJson();
  StatusOr<internal::CronJob> again = internal::CronJob::FromJson(name, written);
  BATON_FUZZ_CHECK(again.ok(), again.status().ToString() + " for " + written);
  BATON_FUZZ_CHECK(*again == *job, written + "\n  became\n  " + again->ToJson());

  StatusOr<internal::CronSchedule> schedule = job->MakeSchedule();
  BATON_FUZZ_CHECK(schedule.ok(), schedule.status().ToString());
  const auto fire = schedule->Next(std::chrono::sys_seconds{std::chrono::seconds{1722470400}});
  if (fire.time_since_epoch().count() <= kMaxCreatedAt) {
    const Task task = internal::TickTask(*job, fire);
    BATON_FUZZ_CHECK(task.Validate().ok(), task.Validate().ToString() + " for " + task.ToJson());
  }
  return 0;
}

}  // namespace baton::fuzz

BATON_FUZZ_MAIN(baton::fuzz::FuzzCronJob)
