#pragma once
// Parsers for what Baton stores per task (docs/keyspace.md): the live record in
// baton:v2:{ns}:tasks, the final record of a non-done final state in ended, the body in bodies or
// a stream entry, and the error history in errors.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "baton/inspector.h"
#include "broker/redis_connection.h"

namespace baton::internal {

// "STATE|TYPE|ATTEMPT|SID".
struct TaskRecord {
  std::string state;  // queued, scheduled, retry, dead
  std::string type;
  int attempt = 0;
  std::string sid;  // queued only
};
std::optional<TaskRecord> ParseTaskRecord(std::string_view text);

// An ended value "STATE|TYPE|ATTEMPTS|WORKER" (WORKER may be empty).
struct EndedRecord {
  std::string state;  // cancelled, deleted, dropped
  std::string type;
  int attempts = 0;
  std::string worker;
};
std::optional<EndedRecord> ParseEndedRecord(std::string_view text);

// A bodies value (a JSON object of strings); nullopt when it is not one.
std::optional<TaskBody> ParseStoredBody(std::string_view json);
// The fields of a stream entry (flat field/value reply).
TaskBody BodyFromEntry(const Reply& fields);
// created_at of a body as Unix s; 0 when it is not an integer.
std::int64_t BodyCreatedAt(const TaskBody& body);

// The errors value (a JSON array, oldest first); malformed elements are skipped.
std::vector<TaskError> ParseErrors(std::string_view json);

// `{"payload": <parsed>, "max_retry": 3, ...}`: numbers as numbers and the payload as JSON when
// they parse, otherwise as the stored text.
nlohmann::json BodyToJson(const TaskBody& body);

}  // namespace baton::internal
