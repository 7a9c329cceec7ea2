#pragma once
// Human-readable output of `baton`: aligned tables and times; --json output is one JSON document
// per command on stdout (pretty-printed, stable field names).
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "baton/inspector.h"

namespace baton::cli {

// A text table: columns padded to their widest cell, two spaces apart.
class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// `text` cut to at most `max_chars` characters ("..." at the end when cut), never inside a
// multi-byte character; invalid UTF-8 shown as U+FFFD.
std::string ShortText(std::string_view text, std::size_t max_chars);

// Pretty JSON on stdout. Strings that are not valid UTF-8 (bytes from Redis) are shown with U+FFFD
// rather than aborting.
void PrintJson(const nlohmann::json& document);

// A value of a document to print as the given JSON text, byte for byte: a payload is shown as
// stored, never re-encoded (123456789012345678901234567890 stays that, 1.10 stays 1.10). Text that
// is not valid JSON is shown as a JSON string instead.
struct RawJsonField {
  nlohmann::json::json_pointer at;
  std::string text;
};
// The document as PrintJson prints it, with each field of `raw` that `document` holds replaced by
// its text.
std::string DumpWithRawFields(nlohmann::json document, const std::vector<RawJsonField>& raw);
// A task (task show, dlq show) with its payload and extra as stored.
void PrintTaskJson(const TaskInfo& task);

// "2024-08-01 12:00:05 UTC"; "-" for 0.
std::string TimeText(std::int64_t unix_ms);
// "3 min 20 s".
std::string DurationText(std::int64_t ms);
// "2024-08-01 12:00:05 UTC (3 min ago)" / "(in 3 min)" relative to now_ms.
std::string WhenText(std::int64_t unix_ms, std::int64_t now_ms);
// Unix ms of this machine's clock.
std::int64_t LocalNowMs();

}  // namespace baton::cli
