#include "output.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>

#include "inspect/time_text.h"
#include "inspect/utf8_text.h"

namespace baton::cli {

namespace {

// Characters (code points) of valid UTF-8 text: the width of a cell.
std::size_t Chars(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace

std::string ShortText(std::string_view text, std::size_t max_chars) {
  std::string valid = internal::ValidUtf8(text);
  if (Chars(valid) <= max_chars) return valid;
  std::size_t keep = max_chars > 3 ? max_chars - 3 : 0, chars = 0, end = 0;
  while (end < valid.size()) {
    if ((static_cast<unsigned char>(valid[end]) & 0xC0) != 0x80) {
      if (chars == keep) break;
      ++chars;
    }
    ++end;
  }
  return valid.substr(0, end) + "...";
}

void Table::Print(std::ostream& out) const {
  std::vector<std::size_t> widths(headers_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], Chars(internal::ValidUtf8(row[i])));
    }
  };
  measure(headers_);
  for (const auto& row : rows_) measure(row);
  auto print = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t i = 0; i < widths.size(); ++i) {
      std::string cell = i < row.size() ? internal::ValidUtf8(row[i]) : "";
      line += cell;
      if (i + 1 < widths.size()) line += std::string(widths[i] - Chars(cell) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  };
  print(headers_);
  for (const auto& row : rows_) print(row);
}

namespace {

std::string Dump(const nlohmann::json& document) {
  return document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool IsJson(const std::string& text) { return !text.empty() && nlohmann::json::accept(text); }

}  // namespace

void PrintJson(const nlohmann::json& document) { std::cout << Dump(document) << "\n"; }

std::string DumpWithRawFields(nlohmann::json document, const std::vector<RawJsonField>& raw) {
  // Each raw field becomes a unique marker string, whose quoted form is then replaced by the
  // text in the dumped document.
  std::random_device random;
  const std::string nonce = std::to_string(random()) + "-" + std::to_string(random());
  std::vector<std::pair<std::string, const std::string*>> splices;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (!document.contains(raw[i].at) || !IsJson(raw[i].text)) continue;
    std::string marker = "baton-raw-json-" + std::to_string(i) + "-" + nonce;
    document[raw[i].at] = marker;
    splices.emplace_back("\"" + marker + "\"", &raw[i].text);
  }
  std::string out = Dump(document);
  for (const auto& [marker, text] : splices) {
    std::size_t at = out.find(marker);
    if (at != std::string::npos) out.replace(at, marker.size(), *text);
  }
  return out;
}

void PrintTaskJson(const TaskInfo& task) {
  std::vector<RawJsonField> raw;
  if (task.body) {
    raw.push_back({nlohmann::json::json_pointer("/body/payload"), task.body->payload});
    raw.push_back({nlohmann::json::json_pointer("/body/extra"), task.body->extra});
  }
  std::cout << DumpWithRawFields(task.ToJson(), raw) << "\n";
}

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
