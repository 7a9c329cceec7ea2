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

// The `task` field of a work stream entry, split at its first six '|':
// "ID|MAX_RETRY|DELAY_SECONDS|CREATED_AT|EXECUTION_TIMEOUT|ATTEMPT|EXTRA" (EXTRA is last because it
// may contain '|'). The parts are text as written, unchecked; nullopt when there are fewer than six
// '|' (a foreign or malformed entry).
struct EntryTask {
  std::string id;
  std::string max_retry;
  std::string delay_seconds;
  std::string created_at;
  std::string execution_timeout;
  std::string attempt;
  std::string extra;
};
std::optional<EntryTask> ParseEntryTask(std::string_view task);
// The body of a stream entry (flat field/value reply with the fields `task` and `payload`). A
// foreign or malformed entry gives what it has: the payload field, and empty fields where its
// `task` field is missing or does not split.
TaskBody BodyFromEntry(const Reply& fields);
// The task id of a stream entry (the first part of its `task` field); "" when it has none.
std::string EntryTaskId(const Reply& fields);
// created_at of a body as Unix s; 0 when it is not an integer.
std::int64_t BodyCreatedAt(const TaskBody& body);

// The errors value (a JSON array, oldest first); malformed elements are skipped.
std::vector<TaskError> ParseErrors(std::string_view json);

// `{"payload": <parsed>, "max_retry": 3, ...}`: numbers as numbers and the payload as JSON when
// they parse, otherwise as the stored text.
nlohmann::json BodyToJson(const TaskBody& body);

}  // namespace baton::internal
