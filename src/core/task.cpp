// Task <-> task document (contract/task.schema.json).
//
// Payload bytes: FromJson keeps the payload exactly as the producer serialized it. The document is
// parsed with nlohmann (which checks the syntax and gives typed values for the other fields), and
// the payload's byte span is then located in the original text by a small scanner
// (core/json_span.h). ToJson writes that text back verbatim. Extra fields travel as parsed JSON
// values: their meaning is kept, their formatting is nlohmann's (keys sorted, numbers in shortest
// form; integers up to 64 bits are exact).
#include "baton/task.h"

#include <optional>
#include <string>

#include "core/json_span.h"
#include "core/task_rules.h"

namespace baton {
namespace {

namespace rules = internal::task_rules;
using nlohmann::json;
using rules::IntegerRule;
using rules::PayloadCheck;

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

namespace internal::task_rules {

Status CheckTask(const Task& task, PayloadCheck payload_check) {
  if (Status s = rules::CheckTaskId(task.task_id); !s.ok()) return s;
  if (Status s = rules::CheckName("namespace", task.ns); !s.ok()) return s;
  if (Status s = rules::CheckName("task_type", task.task_type); !s.ok()) return s;
  if (Status s = rules::CheckPayloadText(task.payload_json, payload_check); !s.ok()) return s;
  if (Status s = rules::CheckInteger(rules::kMaxRetryRule, task.max_retry); !s.ok()) return s;
  if (Status s = rules::CheckInteger(rules::kDelaySecondsRule, task.delay_seconds); !s.ok()) {
    return s;
  }
  if (Status s = rules::CheckInteger(rules::kCreatedAtRule, task.created_at); !s.ok()) {
    return s;
  }
  if (task.execution_timeout) {
    if (Status s = rules::CheckInteger(rules::kExecutionTimeoutRule, *task.execution_timeout);
        !s.ok()) {
      return s;
    }
  }
  return rules::CheckExtra(task.extra);
}

}  // namespace internal::task_rules

namespace {

const json* Member(const json& document, std::string_view key) {
  auto it = document.find(key);
  return it == document.end() ? nullptr : &*it;
}

Status Required(std::string_view field) { return Status::InvalidArgument(field, "required"); }

// A required string member checked by `check` (task_id or a name).
template <typename Check>
Status ReadString(const json& document, std::string_view field, std::string_view rule, Check check,
                  std::string* out) {
  const json* value = Member(document, field);
  if (value == nullptr) return Required(field);
  if (!value->is_string()) {
    return Status::InvalidArgument(field,
                                   std::string(rule) + " (got " + rules::BriefValue(*value) + ")");
  }
  *out = value->get<std::string>();
  return check(*out);
}

Status ReadRequiredInteger(const json& document, const IntegerRule& rule, std::int64_t* out) {
  const json* value = Member(document, rule.field);
  if (value == nullptr) return Required(rule.field);
  return rules::ReadInteger(rule, *value, out);
}

// Builds a Task from a parsed document; `payload_text` is the payload's original text if known.
StatusOr<Task> TaskFromParsed(const json& document, std::optional<std::string_view> payload_text) {
  if (!document.is_object()) {
    return Status::InvalidArgument(
        "document",
        "must be a JSON object (got " + std::string(rules::JsonTypeName(document)) + ")");
  }
  Task task;
  if (Status s =
          ReadString(document, "task_id", rules::kTaskIdRule, rules::CheckTaskId, &task.task_id);
      !s.ok()) {
    return s;
  }
  auto check_name = [](std::string_view field) {
    return [field](std::string_view name) { return rules::CheckName(field, name); };
  };
  if (Status s =
          ReadString(document, "namespace", rules::kNameRule, check_name("namespace"), &task.ns);
      !s.ok()) {
    return s;
  }
  if (Status s = ReadString(document, "task_type", rules::kNameRule, check_name("task_type"),
                            &task.task_type);
      !s.ok()) {
    return s;
  }

  const json* payload = Member(document, "payload");
  if (payload == nullptr) return Required("payload");
  if (!payload->is_object()) {
    return Status::InvalidArgument("payload", "must be a JSON object (got " +
                                                  std::string(rules::JsonTypeName(*payload)) + ")");
  }
  task.payload_json = payload_text ? std::string(*payload_text) : Dump(*payload);
  if (Status s = rules::CheckPayloadText(task.payload_json, PayloadCheck::kSizeOnly); !s.ok()) {
    return s;
  }

  std::int64_t value = 0;
  if (Status s = ReadRequiredInteger(document, rules::kMaxRetryRule, &value); !s.ok()) return s;
  task.max_retry = static_cast<int>(value);
  if (Status s = ReadRequiredInteger(document, rules::kDelaySecondsRule, &task.delay_seconds);
      !s.ok()) {
    return s;
  }
  if (Status s = ReadRequiredInteger(document, rules::kCreatedAtRule, &task.created_at); !s.ok()) {
    return s;
  }
  if (const json* timeout = Member(document, "execution_timeout"); timeout != nullptr) {
    if (Status s = rules::ReadInteger(rules::kExecutionTimeoutRule, *timeout, &value); !s.ok()) {
      return s;
    }
    task.execution_timeout = static_cast<int>(value);
  }

  for (const auto& [key, member] : document.items()) {
    if (!rules::IsTaskField(key)) task.extra[key] = member;
  }
  if (Status s = rules::CheckExtra(task.extra); !s.ok()) return s;
  return task;
}

// Extra fields are copied into Task::extra, and nlohmann copies and prints recursively: one nested
// 100,000 deep (200 KB) would overflow the stack. The payload stays text (never copied), so any
// depth is fine there. Cheap for ordinary documents: a text shorter than twice the limit cannot
// nest deeper than it.
Status CheckExtraDepth(const json& parsed, std::string_view document) {
  constexpr std::size_t kLimit = internal::kMaxPrintedJsonDepth;
  if (document.size() <= 2 * kLimit || !parsed.is_object() ||
      internal::JsonNestingDepth(document) <= kLimit) {
    return Status::Ok();
  }
  for (const auto& member : parsed.items()) {
    const std::string& key = member.key();
    if (rules::IsTaskField(key)) continue;
    std::optional<std::string_view> text = internal::FindTopLevelMember(document, key);
    if (text && internal::JsonNestingDepth(*text) > kLimit - 1) {
      const std::string rule = "member \"" + key +
                               "\" must not nest arrays and objects deeper than " +
                               std::to_string(kLimit - 1) + " levels";
      return Status::InvalidArgument("extra", rule);
    }
  }
  return Status::Ok();
}

}  // namespace

Status Task::Validate() const { return rules::CheckTask(*this, PayloadCheck::kFull); }

std::string Task::ToJson() const {
  std::string out;
  out.reserve(payload_json.size() + 256);
  out.append("{\"task_id\":").append(Dump(task_id));
  out.append(",\"namespace\":").append(Dump(ns));
  out.append(",\"task_type\":").append(Dump(task_type));
  out.append(",\"payload\":").append(payload_json);
  out.append(",\"max_retry\":").append(std::to_string(max_retry));
  out.append(",\"delay_seconds\":").append(std::to_string(delay_seconds));
  out.append(",\"created_at\":").append(std::to_string(created_at));
  if (execution_timeout) {
    out.append(",\"execution_timeout\":").append(std::to_string(*execution_timeout));
  }
  if (extra.is_object()) {
    for (const auto& [key, value] : extra.items()) {
      if (rules::IsTaskField(key)) continue;
      out.append(",").append(Dump(key)).append(":").append(Dump(value));
    }
  }
  out.append("}");
  return out;
}

nlohmann::json Task::ToJsonObject() const {
  json document = json::object();
  if (extra.is_object()) {
    for (const auto& [key, value] : extra.items()) {
      if (!rules::IsTaskField(key)) document[key] = value;
    }
  }
  document["task_id"] = task_id;
  document["namespace"] = ns;
  document["task_type"] = task_type;
  document["payload"] = Payload();
  document["max_retry"] = max_retry;
  document["delay_seconds"] = delay_seconds;
  document["created_at"] = created_at;
  if (execution_timeout) document["execution_timeout"] = *execution_timeout;
  return document;
}

StatusOr<Task> Task::FromJson(std::string_view document) {
  json parsed;
  try {
    parsed = json::parse(document);
  } catch (const json::exception& e) {
    return Status::InvalidArgument("document", "not valid JSON: " + rules::ParseErrorMessage(e));
  }
  if (Status s = CheckExtraDepth(parsed, document); !s.ok()) return s;
  return TaskFromParsed(parsed, internal::FindTopLevelMember(document, "payload"));
}

StatusOr<Task> Task::FromJsonObject(const nlohmann::json& document) {
  return TaskFromParsed(document, std::nullopt);
}

}  // namespace baton
