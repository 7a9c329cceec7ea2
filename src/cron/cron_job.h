#pragma once
// A cron job definition, as stored in the Redis hash `baton:cron` (field: job name, value: the
// JSON document of docs/cron.md), and the identity of the task each tick produces.
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "baton/status.h"
#include "baton/task.h"
#include "cron/cron_schedule.h"

namespace baton::internal {

// What a scheduler does with ticks that came due while no scheduler was running (see cron_due.h).
enum class MissedTickPolicy {
  kSkip,     // "skip": missed ticks are dropped; the job resumes at its next tick
  kRunOnce,  // "run_once": one task stands in for all the missed ticks
};

// "skip" / "run_once".
std::string_view MissedTickPolicyName(MissedTickPolicy policy);

struct CronJob {
  std::string name;              // the `baton:cron` field; ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$
  std::string schedule;          // a cron line (cron_expression.h)
  std::string timezone = "UTC";  // an IANA zone name
  std::string ns;                // "namespace" in JSON
  std::string task_type;
  nlohmann::json payload = nlohmann::json::object();
  int max_retry = kDefaultMaxRetry;
  bool enabled = true;
  MissedTickPolicy missed = MissedTickPolicy::kSkip;
  std::optional<int> execution_timeout;  // seconds, 1..86400

  // Checks every field (the schedule parses, the zone exists, names match their patterns, ...).
  // The kInvalidArgument Status names the first offending field and its rule.
  Status Validate() const;

  // The schedule bound to the zone; fails like Validate() for the schedule and timezone fields.
  StatusOr<CronSchedule> MakeSchedule() const;

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
