#pragma once
// The task contract (contract/task.schema.json) in C++. A Task is what a producer enqueues and
// what a handler receives; unknown top-level fields travel in `extra`, untouched.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "baton/status.h"

namespace baton {

// Limits from contract/task.schema.json.
inline constexpr int kMaxRetryLimit = 25;
inline constexpr int kDefaultMaxRetry = 3;
inline constexpr std::int64_t kMaxDelaySeconds = 31536000;
inline constexpr std::int64_t kMinCreatedAt = 946684800;   // 2000-01-01
inline constexpr std::int64_t kMaxCreatedAt = 4102444800;  // 2100-01-01
inline constexpr int kMaxExecutionTimeout = 86400;
inline constexpr std::size_t kMaxPayloadBytes = 524288;

struct Task {
  std::string task_id;
  std::string ns;  // "namespace" in JSON
  std::string task_type;
  std::string payload_json = "{}";  // a JSON object, byte for byte as the producer wrote it
  int max_retry = kDefaultMaxRetry;
  std::int64_t delay_seconds = 0;
  std::int64_t created_at = 0;           // Unix seconds
  std::optional<int> execution_timeout;  // seconds
  // Every other top-level field (trace, headers, fields of newer producers): a JSON object.
  nlohmann::json extra = nlohmann::json::object();

  // Parses payload_json (throws nlohmann::json::parse_error when it is not JSON).
  nlohmann::json Payload() const { return nlohmann::json::parse(payload_json); }

  // Checks every rule of the contract, in schema order, and returns the first violation as
  // kInvalidArgument "<field>: <rule> (got <value>)", e.g. "max_retry: must be an integer 0..25
  // (got 99)". Nested fields are dotted ("trace.traceparent", "headers.<name>"); `extra` itself
  // must be an object without contract field names. Never throws.
  Status Validate() const;

  // The task document: compact JSON, contract fields first, then the extra fields (sorted by
  // key). payload_json is written verbatim, so the producer's payload bytes survive; the result is
  // valid JSON when Validate() is OK. Never throws.
  std::string ToJson() const;
  // The same document as a JSON value (the payload re-parsed, so exotic numbers may be rounded).
  // Throws nlohmann::json::parse_error when payload_json is not JSON.
  nlohmann::json ToJsonObject() const;

  // Parses and validates a task document. Errors are kInvalidArgument naming the field and the
  // rule ("max_retry: must be an integer 0..25 (got 99)", "task_id: required", "document: not
  // valid JSON: <parser message>"). payload_json keeps the exact bytes of the payload value in
  // `document` (whitespace, number spelling, escapes); unknown top-level fields go to `extra`.
  // Integer fields accept integral JSON numbers (3.0 is 3, as in JSON Schema). Never throws.
  static StatusOr<Task> FromJson(std::string_view document);
  // Same, from an already parsed document; payload_json is then the payload re-serialized.
  static StatusOr<Task> FromJsonObject(const nlohmann::json& document);
};

// A new UUIDv7 (RFC 9562), lowercase canonical form: 48-bit Unix ms timestamp, version 7, a 12-bit
// counter, variant 10, 62 random bits. Thread-safe; strictly increasing (as strings) within a
// process, including across threads; safe after fork().
std::string NewTaskId();

// True when `name` is a valid namespace / task type: ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$.
bool IsValidName(std::string_view name);
// True when `id` is a valid task id: ^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$.
bool IsValidTaskId(std::string_view id);

}  // namespace baton
