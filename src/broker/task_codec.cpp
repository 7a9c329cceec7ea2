#include "broker/task_codec.h"

#include <climits>
#include <string>

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
  const Reply* values = &entries.elements[index * kValuesPerEntry];
  DeliveredTask delivered;
  delivered.stream_id = values[0].AsString();
  if (stream_id_out != nullptr) *stream_id_out = delivered.stream_id;
  Task& task = delivered.task;
  task.task_id = values[1].AsString();
  if (task_id_out != nullptr) *task_id_out = task.task_id;
  task.ns = std::string(ns);
  task.task_type = std::string(type);
  task.payload_json = values[2].AsString();

  std::int64_t number = 0;
  Status status =
      task_rules::ParseInteger(task_rules::kMaxRetryRule, values[3].AsString(), &number);
  task.max_retry = static_cast<int>(number);
  if (status.ok()) {
    status = task_rules::ParseInteger(task_rules::kDelaySecondsRule, values[4].AsString(),
                                      &task.delay_seconds);
  }
  if (status.ok()) {
    status = task_rules::ParseInteger(task_rules::kCreatedAtRule, values[5].AsString(),
                                      &task.created_at);
  }
  if (const std::string timeout = values[6].AsString(); status.ok() && !timeout.empty()) {
    status = task_rules::ParseInteger(task_rules::kExecutionTimeoutRule, timeout, &number);
    task.execution_timeout = static_cast<int>(number);
  }
  if (const std::string extra = values[7].AsString(); status.ok() && !extra.empty()) {
    task.extra = nlohmann::json::parse(extra, nullptr, /*allow_exceptions=*/false);
    if (task.extra.is_discarded()) {
      status = Status::InvalidArgument("extra", "not valid JSON");
    } else if (!task.extra.is_object()) {
      status = Status::InvalidArgument(
          "extra",
          "must be a JSON object (got " + std::string(task_rules::JsonTypeName(task.extra)) + ")");
    }
  }
  if (status.ok()) status = task_rules::ParseInteger(kAttemptRule, values[8].AsString(), &number);
  if (!status.ok()) return status;
  delivered.attempt = static_cast<int>(number) + 1;

  // Every rule of the contract, including "payload is a JSON object": the entry may have been
  // written by any producer in any language.
  if (Status s = task.Validate(); !s.ok()) return s;
  return delivered;
}

}  // namespace baton::internal
