#include "event_decode.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <string_view>

namespace baton::collector {
namespace {

constexpr std::array<std::string_view, 10> kStates = {"new",     "scheduled", "queued", "active",
                                                      "retry",   "dead",      "done",   "cancelled",
                                                      "deleted", "dropped"};

bool ParseInt(std::string_view text, std::int64_t* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::vector<std::string_view> Words(std::string_view list) {
  std::vector<std::string_view> words;
  std::size_t pos = 0;
  while (pos < list.size()) {
    while (pos < list.size() && list[pos] == ' ') ++pos;
    const std::size_t start = pos;
    while (pos < list.size() && list[pos] != ' ') ++pos;
    if (pos > start) words.push_back(list.substr(start, pos - start));
  }
  return words;
}

}  // namespace

bool ParseStreamId(const std::string& id, std::int64_t* ms, std::int64_t* seq) {
  const auto dash = id.find('-');
  if (dash == std::string::npos) return false;
  return ParseInt(std::string_view(id).substr(0, dash), ms) &&
         ParseInt(std::string_view(id).substr(dash + 1), seq);
}

StatusOr<std::vector<EventRow>> DecodeEventEntry(const std::string& ns, const std::string& entry_id,
                                                 const StreamFields& fields) {
  EventRow base;
  base.ns = ns;
  if (!ParseStreamId(entry_id, &base.entry_ms, &base.entry_seq)) {
    return Status::InvalidArgument("id", "must be a stream id MS-SEQ, got '" + entry_id + "'");
  }
  const std::string* values[7] = {};
  static constexpr std::array<std::string_view, 7> kNames = {"type", "from",     "to",   "worker",
                                                             "ids",  "attempts", "error"};
  for (const auto& [name, value] : fields) {
    for (std::size_t i = 0; i < kNames.size(); ++i) {
      if (name == kNames[i]) values[i] = &value;
    }
  }
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (values[i] == nullptr) return Status::InvalidArgument(kNames[i], "is missing");
  }
  base.type = *values[0];
  base.from = *values[1];
  base.to = *values[2];
  base.worker = *values[3];
  base.error = *values[6];
  if (base.type.empty()) return Status::InvalidArgument("type", "must not be empty");
  for (const std::string* state : {&base.from, &base.to}) {
    if (std::find(kStates.begin(), kStates.end(), *state) == kStates.end()) {
      return Status::InvalidArgument(state == &base.from ? "from" : "to",
                                     "must be a task state, got '" + *state + "'");
    }
  }
  const auto ids = Words(*values[4]);
  const auto attempts = Words(*values[5]);
  if (ids.empty()) return Status::InvalidArgument("ids", "must list at least one task id");
  if (ids.size() != attempts.size()) {
    return Status::InvalidArgument("attempts", "must have one attempt per id (" +
                                                   std::to_string(ids.size()) + " ids, " +
                                                   std::to_string(attempts.size()) + " attempts)");
  }
  std::vector<EventRow> rows;
  rows.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EventRow row = base;
    row.idx = static_cast<std::int64_t>(i);
    row.task_id = std::string(ids[i]);
    if (!ParseInt(attempts[i], &row.attempt) || row.attempt < 0) {
      return Status::InvalidArgument(
          "attempts", "must be non-negative integers, got '" + std::string(attempts[i]) + "'");
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

WorkerIdentity ParseWorkerName(const std::string& consumer) {
  static constexpr std::array<std::string_view, 5> kLanguages = {"cpp", "python", "node", "go",
                                                                 "java"};
  WorkerIdentity who;
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (;;) {
    const auto colon = consumer.find(':', start);
    parts.push_back(std::string_view(consumer).substr(start, colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  // <service>:<host>:<pid>:<6 hex>:<language>, read from the right (a service may hold ':').
  if (parts.size() < 5) return who;
  const std::size_t n = parts.size();
  std::int64_t pid = 0;
  if (std::find(kLanguages.begin(), kLanguages.end(), parts[n - 1]) == kLanguages.end() ||
      !ParseInt(parts[n - 3], &pid)) {
    return who;
  }
  who.language = std::string(parts[n - 1]);
  who.host = std::string(parts[n - 4]);
  const auto service_end = consumer.size() - (parts[n - 4].size() + parts[n - 3].size() +
                                              parts[n - 2].size() + parts[n - 1].size() + 4);
  who.service = consumer.substr(0, service_end);
  return who;
}

}  // namespace baton::collector
