#pragma once
// Work stream entries as tests read and write them, independently of libbaton's own parsers
// (docs/keyspace.md): two fields, in this order,
//   task     'ID|MAX_RETRY|DELAY_SECONDS|CREATED_AT|EXECUTION_TIMEOUT|ATTEMPT|EXTRA'
//   payload  the payload bytes
// EXTRA (the extra JSON object text, or empty) is last because it may contain '|'.
#include <hiredis/hiredis.h>

#include <map>
#include <string>

namespace baton::testing {

// The 'task' field of an entry.
inline std::string WorkEntryTask(const std::string& id, const std::string& max_retry,
                                 const std::string& delay_seconds, const std::string& created_at,
                                 const std::string& execution_timeout, const std::string& attempt,
                                 const std::string& extra) {
  return id + "|" + max_retry + "|" + delay_seconds + "|" + created_at + "|" + execution_timeout +
         "|" + attempt + "|" + extra;
}

// The fields of an entry (its flat field/value reply) by name, plus, when its 'task' field splits
// at six '|', the parts of it by name: id, max_retry, delay_seconds, created_at,
// execution_timeout, attempt, extra.
inline std::map<std::string, std::string> WorkEntryFields(const redisReply* flat) {
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i + 1 < flat->elements; i += 2) {
    out[std::string(flat->element[i]->str, flat->element[i]->len)] =
        std::string(flat->element[i + 1]->str, flat->element[i + 1]->len);
  }
  auto task = out.find("task");
  if (task == out.end()) return out;
  static const char* const kParts[] = {"id",         "max_retry",         "delay_seconds",
                                       "created_at", "execution_timeout", "attempt"};
  const std::string text = task->second;
  std::map<std::string, std::string> parts;
  std::size_t start = 0;
  for (const char* name : kParts) {
    std::size_t bar = text.find('|', start);
    if (bar == std::string::npos) return out;
    parts[name] = text.substr(start, bar - start);
    start = bar + 1;
  }
  parts["extra"] = text.substr(start);
  out.insert(parts.begin(), parts.end());
  return out;
}

}  // namespace baton::testing
