#pragma once
// The rules of contract/task.schema.json, one function per rule, shared by Task::Validate,
// Task::FromJson (typed JSON values) and the wire decoder (decimal strings from Redis), so every
// path reports a broken field with the same words: "<field>: <rule> (got <value>)".
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "baton/status.h"
#include "baton/task.h"

namespace baton::internal::task_rules {

// The contract's own top-level fields, in schema order. Every other top-level field is "extra".
inline constexpr std::array<std::string_view, 8> kTaskFields = {
    "task_id",   "namespace",     "task_type",  "payload",
    "max_retry", "delay_seconds", "created_at", "execution_timeout"};
bool IsTaskField(std::string_view key);

inline constexpr std::string_view kTaskIdRule =
    "must be a string matching ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$";
inline constexpr std::string_view kNameRule =
    "must be a string matching ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$";

// An integer field with an inclusive range. The message reads "<field>: <wording> min..max".
struct IntegerRule {
  std::string_view field;
  std::string_view wording;
  std::int64_t min;
  std::int64_t max;
  bool hint_milliseconds = false;  // created_at: flag values that look like Unix milliseconds
};
inline constexpr IntegerRule kMaxRetryRule{"max_retry", "must be an integer", 0, kMaxRetryLimit};
inline constexpr IntegerRule kDelaySecondsRule{"delay_seconds", "must be an integer", 0,
                                               kMaxDelaySeconds};
inline constexpr IntegerRule kCreatedAtRule{"created_at", "must be Unix seconds", kMinCreatedAt,
                                            kMaxCreatedAt, true};
inline constexpr IntegerRule kExecutionTimeoutRule{"execution_timeout", "must be an integer", 1,
                                                   kMaxExecutionTimeout};

// A short, printable rendering of a JSON value for error messages (at most ~40 characters).
std::string BriefValue(const nlohmann::json& value);
// "object", "array", "string", "number", "boolean", "null".
std::string_view JsonTypeName(const nlohmann::json& value);

// OK when `value` is within the rule's range.
Status CheckInteger(const IntegerRule& rule, std::int64_t value);
// OK when `value` is a JSON number with an integral value within the rule's range (JSON Schema
// counts 3.0 as an integer); stores it in *out.
Status ReadInteger(const IntegerRule& rule, const nlohmann::json& value, std::int64_t* out);
// OK when `text` is a plain decimal integer ("-12", no spaces, no '+') within the range.
Status ParseInteger(const IntegerRule& rule, std::string_view text, std::int64_t* out);

Status CheckTaskId(std::string_view id);
// `field` is "namespace" or "task_type".
Status CheckName(std::string_view field, std::string_view name);

enum class PayloadCheck {
  kFull,      // size, JSON syntax and type
  kSizeOnly,  // the caller already knows the text is one JSON object
};
// The payload rules on its serialized text: a JSON object of at most kMaxPayloadBytes bytes.
Status CheckPayloadText(std::string_view text, PayloadCheck check = PayloadCheck::kFull);

// Every rule of a task (Task::Validate is CheckTask(task, kFull)); kSizeOnly for a payload text
// the caller serialized from a JSON object itself.
Status CheckTask(const Task& task, PayloadCheck payload_check);

// The rules on the extra top-level fields: an object, none of them a contract field, and the
// shapes of "trace" and "headers" when present.
Status CheckExtra(const nlohmann::json& extra);

// A parse error message without nlohmann's "[json.exception.parse_error.101] " prefix.
std::string ParseErrorMessage(const nlohmann::json::exception& error);

}  // namespace baton::internal::task_rules
