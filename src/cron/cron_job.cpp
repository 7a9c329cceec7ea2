#include "cron/cron_job.h"

#include <array>
#include <utility>

#include "core/json_span.h"

namespace baton::internal {
namespace {

using nlohmann::json;

constexpr std::string_view kNamePatternRule = "must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$";
constexpr std::array<std::string_view, 9> kKnownFields = {
    "schedule",  "timezone", "namespace", "task_type",        "payload",
    "max_retry", "enabled",  "missed",    "execution_timeout"};

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

Status CheckName(std::string_view field, std::string_view value) {
  if (IsValidName(value)) return Status::Ok();
  return Status::InvalidArgument(field, kNamePatternRule);
}

std::string RangeRule(long long min, long long max, const std::string& got) {
  return "must be an integer " + std::to_string(min) + ".." + std::to_string(max) + " (got " + got +
         ")";
}

Status CheckRange(std::string_view field, long long value, long long min, long long max) {
  if (value >= min && value <= max) return Status::Ok();
  return Status::InvalidArgument(field, RangeRule(min, max, std::to_string(value)));
}

// Reads a JSON integer in min..max; a non-integer gets the same rule as an out-of-range value.
Status ReadInt(const json& value, std::string_view field, int min, int max, int* out) {
  // nlohmann stores non-negative literals as unsigned; compare those without a signed cast.
  bool in_range = false;
  if (value.is_number_unsigned()) {
    const auto v = value.get<unsigned long long>();
    in_range = (min <= 0 || v >= static_cast<unsigned long long>(min)) &&
               v <= static_cast<unsigned long long>(max);
  } else if (value.is_number_integer()) {
    const auto v = value.get<long long>();
    in_range = v >= min && v <= max;
  }
  if (!in_range) return Status::InvalidArgument(field, RangeRule(min, max, Dump(value)));
  *out = value.get<int>();
  return Status::Ok();
}

Status ReadString(const json& value, std::string_view field, std::string* out) {
  if (!value.is_string()) {
    return Status::InvalidArgument(field, "must be a string (got " + Dump(value) + ")");
  }
  *out = value.get<std::string>();
  return Status::Ok();
}

StatusOr<MissedTickPolicy> ParseMissed(const json& value) {
  if (value == "skip") return MissedTickPolicy::kSkip;
  if (value == "run_once") return MissedTickPolicy::kRunOnce;
  return Status::InvalidArgument("missed",
                                 "must be \"skip\" or \"run_once\" (got " + Dump(value) + ")");
}

// Every field of the public definition, in declaration order (include/baton/cron.h).
Status ValidateSpec(const CronJobSpec& job) {
  if (Status s = CheckName("name", job.name); !s.ok()) return s;
  if (auto schedule_or = MakeCronSchedule(job.schedule, job.timezone); !schedule_or.ok()) {
    return schedule_or.status();
  }
  if (Status s = CheckName("namespace", job.ns); !s.ok()) return s;
  if (Status s = CheckName("task_type", job.task_type); !s.ok()) return s;
  if (!job.payload.is_object()) return Status::InvalidArgument("payload", "must be a JSON object");
  if (const std::size_t size = Dump(job.payload).size(); size > kMaxPayloadBytes) {
    return Status::InvalidArgument("payload",
                                   "must be at most " + std::to_string(kMaxPayloadBytes) +
                                       " bytes serialized (got " + std::to_string(size) + ")");
  }
  if (Status s = CheckRange("max_retry", job.max_retry, 0, kMaxRetryLimit); !s.ok()) return s;
  if (job.missed != MissedTicks::kSkip && job.missed != MissedTicks::kRunOnce) {
    return Status::InvalidArgument("missed", "must be kSkip or kRunOnce");
  }
  if (job.execution_timeout) {
    if (Status s = CheckRange("execution_timeout", *job.execution_timeout, 1, kMaxExecutionTimeout);
        !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

}  // namespace

std::string_view MissedTickPolicyName(MissedTickPolicy policy) {
  switch (policy) {
    case MissedTickPolicy::kSkip:
      return "skip";
    case MissedTickPolicy::kRunOnce:
      return "run_once";
  }
  return "skip";
}

}  // namespace baton::internal

namespace baton {

Status CronJobSpec::Validate() const { return internal::ValidateSpec(*this); }

}  // namespace baton

namespace baton::internal {

StatusOr<CronSchedule> MakeCronSchedule(std::string_view schedule, std::string_view timezone) {
  auto expression = CronExpression::Parse(schedule);
  if (!expression.ok()) return expression.status();
  return CronSchedule::Make(std::move(*expression), std::string(timezone));
}

StatusOr<CronJob> CronJob::FromJson(std::string_view name, std::string_view text) {
  // Copying or printing the document recurses once per level (see JsonNestingDepth): one
  // definition nested 100,000 deep in baton:cron would crash every batond that reads it.
  if (Status s = CheckJsonDepth("definition", text); !s.ok()) return s;
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    return Status::InvalidArgument("definition", "must be valid JSON");
  }
  if (!document.is_object()) {
    return Status::InvalidArgument("definition", "must be a JSON object");
  }
  for (const auto& [key, value] : document.items()) {
    bool known = false;
    for (std::string_view field : kKnownFields) known = known || key == field;
    if (!known) return Status::InvalidArgument(key, "unknown field");
  }
  CronJob job;
  job.name = std::string(name);
  for (std::string_view field : {"schedule", "namespace", "task_type"}) {
    if (!document.contains(field)) return Status::InvalidArgument(field, "required");
  }
  if (Status s = ReadString(document["schedule"], "schedule", &job.schedule); !s.ok()) return s;
  if (Status s = ReadString(document["namespace"], "namespace", &job.ns); !s.ok()) return s;
  if (Status s = ReadString(document["task_type"], "task_type", &job.task_type); !s.ok()) return s;
  if (document.contains("timezone")) {
    if (Status s = ReadString(document["timezone"], "timezone", &job.timezone); !s.ok()) return s;
  }
  if (document.contains("payload")) job.payload = document["payload"];
  if (document.contains("max_retry")) {
    if (Status s = ReadInt(document["max_retry"], "max_retry", 0, kMaxRetryLimit, &job.max_retry);
        !s.ok()) {
      return s;
    }
  }
  if (document.contains("enabled")) {
    const json& enabled = document["enabled"];
    if (!enabled.is_boolean()) {
      return Status::InvalidArgument("enabled",
                                     "must be true or false (got " + Dump(enabled) + ")");
    }
    job.enabled = enabled.get<bool>();
  }
  if (document.contains("missed")) {
    auto missed = ParseMissed(document["missed"]);
    if (!missed.ok()) return missed.status();
    job.missed = *missed;
  }
  if (document.contains("execution_timeout") && !document["execution_timeout"].is_null()) {
    int timeout = 0;
    if (Status s = ReadInt(document["execution_timeout"], "execution_timeout", 1,
                           kMaxExecutionTimeout, &timeout);
        !s.ok()) {
      return s;
    }
    job.execution_timeout = timeout;
  }
  if (Status s = job.Validate(); !s.ok()) return s;
  return job;
}

nlohmann::json CronJob::ToJsonObject() const {
  json out = {{"schedule", schedule}, {"timezone", timezone},
              {"namespace", ns},      {"task_type", task_type},
              {"payload", payload},   {"max_retry", max_retry},
              {"enabled", enabled},   {"missed", MissedTickPolicyName(missed)}};
  if (execution_timeout) out["execution_timeout"] = *execution_timeout;
  return out;
}

std::string CronJob::ToJson() const { return Dump(ToJsonObject()); }

std::string TickTaskId(const CronJob& job, std::chrono::sys_seconds fire_time) {
  return "cron:" + job.name + ":" + std::to_string(fire_time.time_since_epoch().count());
}

Task TickTask(const CronJob& job, std::chrono::sys_seconds fire_time) {
  Task task;
  task.task_id = TickTaskId(job, fire_time);
  task.ns = job.ns;
  task.task_type = job.task_type;
  task.payload_json = Dump(job.payload);
  task.max_retry = job.max_retry;
  task.created_at = fire_time.time_since_epoch().count();
  task.execution_timeout = job.execution_timeout;
  return task;
}

}  // namespace baton::internal
