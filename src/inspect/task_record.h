#pragma once
// Parsers for what Baton stores per task (docs/keyspace.md): the live record in
// baton:{ns}:tasks, the final record in done:ID, the body in bodies or a stream entry, and the
// error history in errors.
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

// {"state":"done","type":"T","attempts":1,"finished_ms":...,"worker":"..."}.
struct FinalRecord {
  std::string state;  // done, cancelled, deleted
  std::string type;
  int attempts = 0;
  std::int64_t finished_ms = 0;
  std::string worker;
};
std::optional<FinalRecord> ParseFinalRecord(std::string_view json);

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
