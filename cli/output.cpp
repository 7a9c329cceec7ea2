#include "output.h"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "inspect/time_text.h"

namespace baton::cli {

void Table::Print(std::ostream& out) const {
  std::vector<std::size_t> widths(headers_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  };
  measure(headers_);
  for (const auto& row : rows_) measure(row);
  auto print = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t i = 0; i < widths.size(); ++i) {
      std::string cell = i < row.size() ? row[i] : "";
      line += cell;
      if (i + 1 < widths.size()) line += std::string(widths[i] - cell.size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  };
  print(headers_);
  for (const auto& row : rows_) print(row);
}

void PrintJson(const nlohmann::json& document) { std::cout << document.dump(2) << "\n"; }

std::string TimeText(std::int64_t unix_ms) {
  return unix_ms == 0 ? "-" : internal::FormatTime(unix_ms);
}

std::string DurationText(std::int64_t ms) { return internal::FormatDuration(ms); }

std::string WhenText(std::int64_t unix_ms, std::int64_t now_ms) {
  if (unix_ms == 0) return "-";
  if (unix_ms >= now_ms) return TimeText(unix_ms) + " (in " + DurationText(unix_ms - now_ms) + ")";
  return TimeText(unix_ms) + " (" + DurationText(now_ms - unix_ms) + " ago)";
}

std::int64_t LocalNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace baton::cli
