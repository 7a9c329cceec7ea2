#include "broker/task_codec.h"

#include <climits>
#include <string>

#include "core/json_span.h"
#include "core/task_rules.h"

namespace baton::internal {
namespace {

constexpr std::size_t kValuesPerEntry = 9;
constexpr task_rules::IntegerRule kAttemptRule{"attempt", "must be an integer", 0, INT_MAX - 1};

}  // namespace

std::vector<std::string> EncodeEnqueueArgs(const Task& task, std::int64_t run_at_ms,
                                           const std::string& unique_key,
                                           std::int64_t unique_ttl_s) {
  std::vector<std::string> args;
  args.reserve(10);
  args.push_back(task.task_id);
  args.push_back(task.payload_json);
  args.push_back(std::to_string(task.max_retry));
  args.push_back(std::to_string(task.delay_seconds));
  args.push_back(std::to_string(task.created_at));
  args.push_back(task.execution_timeout ? std::to_string(*task.execution_timeout) : "");
  args.push_back(task.extra.is_object() && !task.extra.empty()
                     ? task.extra.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                     : "");
  args.push_back(std::to_string(run_at_ms));
  args.push_back(unique_key);
  args.push_back(std::to_string(unique_key.empty() ? 0 : unique_ttl_s));
  return args;
}

namespace {

// The values of one delivered task as text, however they were read.
struct EntryValues {
  std::string_view stream_id;
  std::string_view id;
  std::string_view payload;
  std::string_view max_retry;
  std::string_view delay_seconds;
  std::string_view created_at;
  std::string_view execution_timeout;  // "" when none
  std::string_view extra;              // "" when none
  std::string_view attempt;            // attempts made before this delivery
};

StatusOr<DeliveredTask> DecodeValues(std::string_view ns, std::string_view type,
                                     const EntryValues& v) {
  DeliveredTask delivered;
  delivered.stream_id = std::string(v.stream_id);
  Task& task = delivered.task;
  task.task_id = std::string(v.id);
  task.ns = std::string(ns);
  task.task_type = std::string(type);
  task.payload_json = std::string(v.payload);

  std::int64_t number = 0;
  Status status = task_rules::ParseInteger(task_rules::kMaxRetryRule, v.max_retry, &number);
  task.max_retry = static_cast<int>(number);
  if (status.ok()) {
    status = task_rules::ParseInteger(task_rules::kDelaySecondsRule, v.delay_seconds,
                                      &task.delay_seconds);
  }
  if (status.ok()) {
    status = task_rules::ParseInteger(task_rules::kCreatedAtRule, v.created_at, &task.created_at);
  }
  if (status.ok() && !v.execution_timeout.empty()) {
    status =
        task_rules::ParseInteger(task_rules::kExecutionTimeoutRule, v.execution_timeout, &number);
    task.execution_timeout = static_cast<int>(number);
  }
  // Copying or printing extra recurses once per level (see JsonNestingDepth).
  if (status.ok()) status = CheckJsonDepth("extra", v.extra);
  if (status.ok() && !v.extra.empty()) {
    task.extra = nlohmann::json::parse(v.extra, nullptr, /*allow_exceptions=*/false);
    if (task.extra.is_discarded()) {
      status = Status::InvalidArgument("extra", "not valid JSON");
    } else if (!task.extra.is_object()) {
      status = Status::InvalidArgument(
          "extra",
          "must be a JSON object (got " + std::string(task_rules::JsonTypeName(task.extra)) + ")");
    }
  }
  if (status.ok()) status = task_rules::ParseInteger(kAttemptRule, v.attempt, &number);
  if (!status.ok()) return status;
  delivered.attempt = static_cast<int>(number) + 1;

  // Every rule of the contract, including "payload is a JSON object": the entry may have been
  // written by any producer in any language.
  if (Status s = task.Validate(); !s.ok()) return s;
  return delivered;
}

}  // namespace

StatusOr<DeliveredTask> DecodeDequeuedEntry(std::string_view ns, std::string_view type,
                                            const Reply& entries, std::size_t index,
                                            std::string* stream_id_out, std::string* task_id_out) {
  if (!entries.is_array() || entries.elements.size() % kValuesPerEntry != 0 ||
      (index + 1) * kValuesPerEntry > entries.elements.size()) {
    return Status::Internal(
        "baton_dequeue: entries must be a flat array of 9 values per task; "
        "cannot read entry " +
        std::to_string(index));
  }
  // AsString: a value may come as an integer reply.
  std::string v[kValuesPerEntry];
  for (std::size_t i = 0; i < kValuesPerEntry; ++i) {
    v[i] = entries.elements[index * kValuesPerEntry + i].AsString();
  }
  if (stream_id_out != nullptr) *stream_id_out = v[0];
  if (task_id_out != nullptr) *task_id_out = v[1];
  return DecodeValues(ns, type, EntryValues{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]});
}

std::optional<EntryTask> ParseEntryTask(std::string_view task) {
  std::string_view parts[6];
  std::size_t start = 0;
  for (auto& part : parts) {
    std::size_t bar = task.find('|', start);
    if (bar == std::string_view::npos) return std::nullopt;
    part = task.substr(start, bar - start);
    start = bar + 1;
  }
  return EntryTask{parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], task.substr(start)};
}

StatusOr<DeliveredTask> DecodeStreamEntry(std::string_view ns, std::string_view type,
                                          std::string_view stream_id, const Reply& fields,
                                          std::string* task_id_out, std::string* attempt_out) {
  if (task_id_out != nullptr) task_id_out->clear();
  if (attempt_out != nullptr) attempt_out->clear();
  const std::string* task_field = nullptr;
  const std::string* payload = nullptr;
  if (fields.is_array()) {
    for (std::size_t i = 0; i + 1 < fields.elements.size(); i += 2) {
      const std::string& name = fields.elements[i].str;
      if (name == "task") task_field = &fields.elements[i + 1].str;
      if (name == "payload") payload = &fields.elements[i + 1].str;
    }
  }
  if (task_field == nullptr) return Status::InvalidArgument("task", "missing field");
  std::optional<EntryTask> parts = ParseEntryTask(*task_field);
  if (!parts) {
    return Status::InvalidArgument(
        "task", "must be ID|MAX_RETRY|DELAY_SECONDS|CREATED_AT|EXECUTION_TIMEOUT|ATTEMPT|EXTRA");
  }
  if (task_id_out != nullptr) *task_id_out = std::string(parts->id);
  if (attempt_out != nullptr) *attempt_out = std::string(parts->attempt);
  if (payload == nullptr) return Status::InvalidArgument("payload", "missing field");
  return DecodeValues(
      ns, type,
      EntryValues{stream_id, parts->id, *payload, parts->max_retry, parts->delay_seconds,
                  parts->created_at, parts->execution_timeout, parts->extra, parts->attempt});
}

}  // namespace baton::internal
