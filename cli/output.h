#pragma once
// Human-readable output of `baton`: aligned tables and times; --json output is one JSON document
// per command on stdout (pretty-printed, stable field names).
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// Pretty JSON on stdout.
void PrintJson(const nlohmann::json& document);

// "2024-08-01 12:00:05 UTC"; "-" for 0.
std::string TimeText(std::int64_t unix_ms);
// "3 min 20 s".
std::string DurationText(std::int64_t ms);
// "2024-08-01 12:00:05 UTC (3 min ago)" / "(in 3 min)" relative to now_ms.
std::string WhenText(std::int64_t unix_ms, std::int64_t now_ms);
// Unix ms of this machine's clock.
std::int64_t LocalNowMs();

}  // namespace baton::cli
