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
#include "broker/task_codec.h"

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

// The body of a stream entry (flat field/value reply with the fields `task` and `payload`). A
// foreign or malformed entry gives what it has: the payload field, and empty fields where its
// `task` field is missing or does not split.
TaskBody BodyFromEntry(const Reply& fields);
// The task id of a stream entry (the first part of its `task` field); "" when it has none.
std::string EntryTaskId(const Reply& fields);
// created_at of a body as Unix s; 0 when it is not an integer.
std::int64_t BodyCreatedAt(const TaskBody& body);

// The error history (baton:v2:{ns}:errors, docs/keyspace.md): field ID holds N, the sequence
// number of the task's newest recorded failure, and field ID|K the JSON object of failure K. Only
// the newest kErrorsKept are kept (ERRORS_KEPT in functions/00-header.lua): ID|max(1, N-49) up to
// ID|N.
inline constexpr std::int64_t kErrorsKept = 50;

// One recorded failure (an ID|K value); nullopt when it is not a JSON object. Invalid UTF-8 (a
// worker's stderr cut in the middle of a character) is replaced, not a reason to drop it.
std::optional<TaskError> ParseTaskError(std::string_view json);

class InspectorCore;

// The error histories of `ids` (errors_key: baton:v2:{ns}:errors), one per id in that order, each
// oldest first and empty when the task has none: one HMGET of the counters, then one HMGET of
// every kept ID|K of the ids that have one (only ID|N, the newest, with newest_only). Values that
// are not a failure's JSON object are skipped. Errors: the connection's, or an error reply's.
StatusOr<std::vector<std::vector<TaskError>>> ReadErrorHistories(
    InspectorCore& core, const std::string& errors_key, const std::vector<std::string>& ids,
    bool newest_only = false);
// The same for one task, over a plain connection (tests, tools).
StatusOr<std::vector<TaskError>> ReadErrorHistory(RedisConnection& conn,
                                                  const std::string& errors_key,
                                                  const std::string& id);

// `[{"attempt":1,"kind":"error","error":"...","stack":"...","worker":"...","at_ms":...}, ...]`,
// as stored (strings as they are: the caller makes them valid UTF-8 when it must).
nlohmann::json ErrorsToJson(const std::vector<TaskError>& errors);

// `{"payload": <parsed>, "max_retry": 3, ...}`: numbers as numbers and the payload as JSON when
// they parse, otherwise as the stored text.
nlohmann::json BodyToJson(const TaskBody& body);

}  // namespace baton::internal
