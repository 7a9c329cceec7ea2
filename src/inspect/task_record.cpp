#include "inspect/task_record.h"

#include <charconv>

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

std::optional<EntryTask> ParseEntryTask(std::string_view task) {
  std::string_view parts[6];
  std::size_t start = 0;
  for (auto& part : parts) {
    std::size_t bar = task.find('|', start);
    if (bar == std::string_view::npos) return std::nullopt;
    part = task.substr(start, bar - start);
    start = bar + 1;
  }
  EntryTask out;
  out.id = std::string(parts[0]);
  out.max_retry = std::string(parts[1]);
  out.delay_seconds = std::string(parts[2]);
  out.created_at = std::string(parts[3]);
  out.execution_timeout = std::string(parts[4]);
  out.attempt = std::string(parts[5]);
  out.extra = std::string(task.substr(start));
  return out;
}

TaskBody BodyFromEntry(const Reply& fields) {
  auto map = FieldMap(fields);
  TaskBody body;
  body.payload = FieldText(map, "payload");
  if (auto task = ParseEntryTask(FieldText(map, "task"))) {
    body.max_retry = std::move(task->max_retry);
    body.delay_seconds = std::move(task->delay_seconds);
    body.created_at = std::move(task->created_at);
    body.execution_timeout = std::move(task->execution_timeout);
    body.extra = std::move(task->extra);
    body.attempt = std::move(task->attempt);
  }
  return body;
}

std::string EntryTaskId(const Reply& fields) {
  auto task = ParseEntryTask(FieldText(FieldMap(fields), "task"));
  return task ? task->id : "";
}

std::int64_t BodyCreatedAt(const TaskBody& body) {
  std::int64_t n = 0;
  return ParseInt(body.created_at, &n) ? n : 0;
}

std::vector<TaskError> ParseErrors(std::string_view json) {
  std::vector<TaskError> errors;
  // A worker's stderr may be cut in the middle of a character, or hold any bytes: the functions
  // store them as they are, and nlohmann refuses to parse (or dump) such strings.
  auto parsed = nlohmann::json::parse(ValidUtf8(json), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_array()) return errors;
  for (const auto& e : parsed) {
    if (!e.is_object()) continue;
    TaskError error;
    error.attempt = static_cast<int>(IntField(e, "attempt"));
    error.kind = StringField(e, "kind");
    error.error = StringField(e, "error");
    error.stack = StringField(e, "stack");
    error.worker = StringField(e, "worker");
    error.at_ms = IntField(e, "at_ms");
    errors.push_back(std::move(error));
  }
  return errors;
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
