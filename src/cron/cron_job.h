#pragma once
// A cron job definition, as stored in the Redis hash `baton:cron` (field: job name, value: the
// JSON document of docs/cron.md), and the identity of the task each tick produces. The fields and
// their validation are public (include/baton/cron.h).
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "baton/cron.h"
#include "baton/status.h"
#include "baton/task.h"
#include "cron/cron_schedule.h"

namespace baton::internal {

// What a scheduler does with ticks that came due while no scheduler was running (see cron_due.h):
// the public baton::MissedTicks under its internal name.
using MissedTickPolicy = MissedTicks;

// "skip" / "run_once".
std::string_view MissedTickPolicyName(MissedTickPolicy policy);

// `schedule` parsed and bound to the zone `timezone`. kInvalidArgument "schedule: ..." or
// "timezone: unknown IANA time zone ...".
StatusOr<CronSchedule> MakeCronSchedule(std::string_view schedule, std::string_view timezone);

// The public definition (baton::CronJobSpec: the fields and Validate()) plus what the engine needs:
// the JSON form stored in baton:cron and the schedule bound to its zone. A CronJob is a
// CronJobSpec, so it passes to CronClient as it is, and `CronJob{spec}` makes one from a spec.
struct CronJob : CronJobSpec {
  // The schedule bound to the zone; fails like Validate() for the schedule and timezone fields.
  StatusOr<CronSchedule> MakeSchedule() const { return MakeCronSchedule(schedule, timezone); }

  // Parses and validates the JSON definition of the job `name`. Unknown fields are rejected
  // (a misspelt "timezone" must not silently mean UTC). Errors name the field and the rule.
  static StatusOr<CronJob> FromJson(std::string_view name, std::string_view json);

  // The JSON definition (compact; the name is not part of it, it is the hash field).
  std::string ToJson() const;
  nlohmann::json ToJsonObject() const;

  friend bool operator==(const CronJob&, const CronJob&) = default;
};

// The task id of the tick of `job` at `fire_time`: "cron:<name>:<unix seconds>". Deterministic, so
// every scheduler that fires the same tick enqueues the same id, and Baton's enqueue (idempotent
// on task id) keeps exactly one task. Valid per baton::IsValidTaskId for any valid job name.
std::string TickTaskId(const CronJob& job, std::chrono::sys_seconds fire_time);

// The task of that tick: id TickTaskId(), the job's namespace, type, payload, max_retry and
// execution_timeout, created_at = fire_time (so two schedulers build byte-identical documents).
Task TickTask(const CronJob& job, std::chrono::sys_seconds fire_time);

}  // namespace baton::internal
