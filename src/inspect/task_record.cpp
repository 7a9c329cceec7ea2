#include "inspect/task_record.h"

#include <algorithm>
#include <charconv>
#include <functional>

#include "core/json_span.h"
#include "inspect/inspector_core.h"
#include "inspect/utf8_text.h"

namespace baton::internal {

namespace {

bool ParseInt(std::string_view text, std::int64_t* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string StringField(const nlohmann::json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_null()) return "";
  return it->dump();
}

std::int64_t IntField(const nlohmann::json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end()) return 0;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number()) return static_cast<std::int64_t>(it->get<double>());
  return 0;
}

// A numeric body field as a JSON number when it is one, else the text (or null when empty).
nlohmann::json NumberOrText(const std::string& text) {
  std::int64_t n = 0;
  if (ParseInt(text, &n)) return n;
  if (text.empty()) return nullptr;
  return text;
}

nlohmann::json JsonOrText(const std::string& text) {
  if (text.empty()) return nullptr;
  // Too deep to print as JSON without overflowing the stack: the text as it is.
  if (JsonNestingDepth(text) > kMaxPrintedJsonDepth) return text;
  auto parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return text;
  return parsed;
}

}  // namespace

namespace {

// The four '|'-separated fields of a record; the last one takes the rest of the text.
bool SplitRecord(std::string_view text, std::string_view parts[4]) {
  std::size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    std::size_t bar = text.find('|', start);
    if (bar == std::string_view::npos) return false;
    parts[i] = text.substr(start, bar - start);
    start = bar + 1;
  }
  parts[3] = text.substr(start);
  return !parts[0].empty();
}

}  // namespace

std::optional<TaskRecord> ParseTaskRecord(std::string_view text) {
  std::string_view parts[4];
  std::int64_t attempt = 0;
  if (!SplitRecord(text, parts) || !ParseInt(parts[2], &attempt)) return std::nullopt;
  TaskRecord record;
  record.state = std::string(parts[0]);
  record.type = std::string(parts[1]);
  record.attempt = static_cast<int>(attempt);
  record.sid = std::string(parts[3]);
  return record;
}

std::optional<EndedRecord> ParseEndedRecord(std::string_view text) {
  std::string_view parts[4];
  std::int64_t attempts = 0;
  if (!SplitRecord(text, parts) || !ParseInt(parts[2], &attempts)) return std::nullopt;
  EndedRecord record;
  record.state = std::string(parts[0]);
  record.type = std::string(parts[1]);
  record.attempts = static_cast<int>(attempts);
  record.worker = std::string(parts[3]);
  return record;
}

std::optional<TaskBody> ParseStoredBody(std::string_view json) {
  // Invalid UTF-8 in one field (a foreign writer) must not hide the whole body.
  auto parsed = nlohmann::json::parse(ValidUtf8(json), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) return std::nullopt;
  TaskBody body;
  body.payload = StringField(parsed, "payload");
  body.max_retry = StringField(parsed, "max_retry");
  body.delay_seconds = StringField(parsed, "delay_seconds");
  body.created_at = StringField(parsed, "created_at");
  body.execution_timeout = StringField(parsed, "execution_timeout");
  body.extra = StringField(parsed, "extra");
  if (auto raw = parsed.find("raw"); raw != parsed.end() && raw->is_object()) {
    for (const auto& [name, value] : raw->items()) {
      body.raw_fields.emplace_back(name,
                                   value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  return body;
}

TaskBody BodyFromEntry(const Reply& fields) {
  auto map = FieldMap(fields);
  TaskBody body;
  body.payload = FieldText(map, "payload");
  const std::string text = FieldText(map, "task");  // the parts are views into it
  if (auto task = ParseEntryTask(text)) {
    body.max_retry = std::string(task->max_retry);
    body.delay_seconds = std::string(task->delay_seconds);
    body.created_at = std::string(task->created_at);
    body.execution_timeout = std::string(task->execution_timeout);
    body.extra = std::string(task->extra);
    body.attempt = std::string(task->attempt);
  }
  return body;
}

std::string EntryTaskId(const Reply& fields) {
  const std::string text = FieldText(FieldMap(fields), "task");
  auto task = ParseEntryTask(text);
  return task ? std::string(task->id) : "";
}

std::int64_t BodyCreatedAt(const TaskBody& body) {
  std::int64_t n = 0;
  return ParseInt(body.created_at, &n) ? n : 0;
}

std::optional<TaskError> ParseTaskError(std::string_view json) {
  // A worker's stderr may be cut in the middle of a character, or hold any bytes: the functions
  // store them as they are, and nlohmann refuses to parse (or dump) such strings.
  auto e = nlohmann::json::parse(ValidUtf8(json), nullptr, /*allow_exceptions=*/false);
  if (e.is_discarded() || !e.is_object()) return std::nullopt;
  TaskError error;
  error.attempt = static_cast<int>(IntField(e, "attempt"));
  error.kind = StringField(e, "kind");
  error.error = StringField(e, "error");
  error.stack = StringField(e, "stack");
  error.worker = StringField(e, "worker");
  error.at_ms = IntField(e, "at_ms");
  return error;
}

namespace {

// Runs commands in one round trip and returns their replies in order, error replies included.
using PipelineFn = std::function<StatusOr<std::vector<Reply>>(const std::vector<Command>&)>;

// The one reader of the errors hash (docs/keyspace.md; see ReadErrorHistories).
StatusOr<std::vector<std::vector<TaskError>>> ReadHistories(const PipelineFn& pipeline,
                                                            const std::string& errors_key,
                                                            const std::vector<std::string>& ids,
                                                            bool newest_only) {
  std::vector<std::vector<TaskError>> histories(ids.size());
  if (ids.empty()) return histories;
  Command counters = {"HMGET", errors_key};
  counters.insert(counters.end(), ids.begin(), ids.end());
  auto counted = pipeline({counters});
  if (!counted.ok()) return counted.status();
  const Reply& n_reply = counted->at(0);
  if (n_reply.is_error()) return StatusFromErrorReply(n_reply);

  // Every kept ID|K of every id with a counter, in one HMGET; owner[j]: the id of field j.
  Command fields = {"HMGET", errors_key};
  std::vector<std::size_t> owner;
  for (std::size_t i = 0; i < ids.size() && i < n_reply.elements.size(); ++i) {
    std::int64_t n = 0;
    if (!ParseInt(n_reply.elements[i].AsString(), &n) || n < 1) continue;
    const std::int64_t first = newest_only ? n : std::max<std::int64_t>(1, n - kErrorsKept + 1);
    for (std::int64_t k = first; k <= n; ++k) {
      fields.push_back(ids[i] + "|" + std::to_string(k));
      owner.push_back(i);
    }
  }
  if (owner.empty()) return histories;
  auto values = pipeline({fields});
  if (!values.ok()) return values.status();
  const Reply& v_reply = values->at(0);
  if (v_reply.is_error()) return StatusFromErrorReply(v_reply);
  for (std::size_t j = 0; j < owner.size() && j < v_reply.elements.size(); ++j) {
    const Reply& value = v_reply.elements[j];
    if (value.is_nil()) continue;  // removed meanwhile, or by hand
    if (auto error = ParseTaskError(value.str)) histories[owner[j]].push_back(std::move(*error));
  }
  return histories;
}

}  // namespace

StatusOr<std::vector<std::vector<TaskError>>> ReadErrorHistories(
    InspectorCore& core, const std::string& errors_key, const std::vector<std::string>& ids,
    bool newest_only) {
  return ReadHistories(
      [&core](const std::vector<Command>& commands) { return core.Pipeline(commands); }, errors_key,
      ids, newest_only);
}

StatusOr<std::vector<TaskError>> ReadErrorHistory(RedisConnection& conn,
                                                  const std::string& errors_key,
                                                  const std::string& id) {
  auto histories = ReadHistories(
      [&conn](const std::vector<Command>& commands) {
        for (const auto& c : commands) conn.Append(c);
        return conn.Flush();
      },
      errors_key, {id}, /*newest_only=*/false);
  if (!histories.ok()) return histories.status();
  return std::move(histories->front());
}

nlohmann::json ErrorsToJson(const std::vector<TaskError>& errors) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : errors) {
    out.push_back({{"attempt", e.attempt},
                   {"kind", e.kind},
                   {"error", e.error},
                   {"stack", e.stack},
                   {"worker", e.worker},
                   {"at_ms", e.at_ms}});
  }
  return out;
}

nlohmann::json BodyToJson(const TaskBody& body) {
  nlohmann::json out = {
      {"payload", JsonOrText(body.payload)},
      {"max_retry", NumberOrText(body.max_retry)},
      {"delay_seconds", NumberOrText(body.delay_seconds)},
      {"created_at", NumberOrText(body.created_at)},
      {"execution_timeout", NumberOrText(body.execution_timeout)},
      {"extra", JsonOrText(body.extra)},
  };
  if (!body.attempt.empty()) out["attempt"] = NumberOrText(body.attempt);
  if (!body.raw_fields.empty()) {
    nlohmann::json raw = nlohmann::json::object();
    for (const auto& [name, value] : body.raw_fields) raw[ValidUtf8(name)] = ValidUtf8(value);
    out["raw"] = std::move(raw);
  }
  return out;
}

}  // namespace baton::internal
