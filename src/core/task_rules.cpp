#include "core/task_rules.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace baton::internal::task_rules {
namespace {

using nlohmann::json;

constexpr std::size_t kBriefMax = 40;
constexpr std::size_t kTraceparentMaxChars = 256;
constexpr std::size_t kTracestateMaxChars = 512;
constexpr std::size_t kHeadersMaxFields = 64;
constexpr std::size_t kHeaderValueMaxChars = 1024;

std::string Truncate(std::string text) {
  if (text.size() > kBriefMax) {
    text.resize(kBriefMax - 3);
    // Do not cut a UTF-8 sequence in half.
    while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) {
      text.pop_back();
    }
    if (!text.empty() && (static_cast<unsigned char>(text.back()) & 0x80) != 0) text.pop_back();
    text += "...";
  }
  return text;
}

std::string Got(std::string_view shown) {
  std::string out(" (got ");
  out.append(shown).append(")");
  return out;
}

// JSON Schema's maxLength counts characters (Unicode code points), not bytes.
std::size_t Utf8Length(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

Status InvalidInteger(const IntegerRule& rule, std::string_view shown, bool looks_like_ms) {
  std::string message(rule.wording);
  message.append(" ")
      .append(std::to_string(rule.min))
      .append("..")
      .append(std::to_string(rule.max))
      .append(" (got ")
      .append(shown)
      .append(looks_like_ms ? ": milliseconds?)" : ")");
  return Status::InvalidArgument(rule.field, message);
}

bool LooksLikeMilliseconds(const IntegerRule& rule, std::int64_t value) {
  constexpr std::int64_t kMaxSafe = std::numeric_limits<std::int64_t>::max() / 1000;
  return rule.hint_milliseconds && rule.max <= kMaxSafe && value >= rule.min * 1000 &&
         value <= rule.max * 1000;
}

// A string-valued field with a maximum length in characters.
Status CheckShortString(const std::string& field, const json& value, std::size_t max_chars) {
  std::string rule = "must be a string of at most " + std::to_string(max_chars) + " characters";
  if (!value.is_string()) return Status::InvalidArgument(field, rule + Got(BriefValue(value)));
  const std::size_t chars = Utf8Length(value.get_ref<const std::string&>());
  if (chars > max_chars) {
    return Status::InvalidArgument(
        field, rule + Got("a string of " + std::to_string(chars) + " characters"));
  }
  return Status::Ok();
}

Status CheckTrace(const json& trace) {
  if (!trace.is_object()) {
    return Status::InvalidArgument("trace", "must be a JSON object" + Got(JsonTypeName(trace)));
  }
  for (const auto& [key, value] : trace.items()) {
    std::size_t max_chars = 0;
    if (key == "traceparent") {
      max_chars = kTraceparentMaxChars;
    } else if (key == "tracestate") {
      max_chars = kTracestateMaxChars;
    } else {
      return Status::InvalidArgument(
          "trace", "unknown field " +
                       json(key).dump(-1, ' ', false, json::error_handler_t::replace) +
                       " (allowed: traceparent, tracestate)");
    }
    if (Status s = CheckShortString("trace." + key, value, max_chars); !s.ok()) return s;
  }
  return Status::Ok();
}

Status CheckHeaders(const json& headers) {
  if (!headers.is_object()) {
    return Status::InvalidArgument("headers", "must be a JSON object" + Got(JsonTypeName(headers)));
  }
  if (headers.size() > kHeadersMaxFields) {
    return Status::InvalidArgument("headers", "must have at most " +
                                                  std::to_string(kHeadersMaxFields) + " fields" +
                                                  Got(std::to_string(headers.size())));
  }
  for (const auto& [key, value] : headers.items()) {
    if (Status s = CheckShortString("headers." + key, value, kHeaderValueMaxChars); !s.ok()) {
      return s;
    }
  }
  return Status::Ok();
}

// The JSON type a text starts with, judged by its first significant character.
std::string_view TextTypeName(std::string_view text) {
  const std::size_t pos = text.find_first_not_of(" \t\r\n");
  if (pos == std::string_view::npos) return "nothing";
  switch (text[pos]) {
    case '{':
      return "object";
    case '[':
      return "array";
    case '"':
      return "string";
    case 't':
    case 'f':
      return "boolean";
    case 'n':
      return "null";
    default:
      return "number";
  }
}

// A rejected id or name; a too long one is described by its length, which is what is wrong.
std::string BriefName(std::string_view name, std::size_t max_chars) {
  if (name.size() > max_chars) return "a string of " + std::to_string(name.size()) + " characters";
  return BriefValue(json(name));
}

}  // namespace

bool IsTaskField(std::string_view key) {
  return std::find(kTaskFields.begin(), kTaskFields.end(), key) != kTaskFields.end();
}

std::string BriefValue(const nlohmann::json& value) {
  if (value.is_object() || value.is_array()) {
    // Never serialise a large container only to cut it.
    if (value.empty()) return value.is_object() ? "{}" : "[]";
    return std::string(value.is_object() ? "an object" : "an array") + " of " +
           std::to_string(value.size()) + (value.size() == 1 ? " element" : " elements");
  }
  return Truncate(value.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string_view JsonTypeName(const nlohmann::json& value) {
  switch (value.type()) {
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "number";
    case json::value_t::null:
      return "null";
    default:
      return "binary";
  }
}

Status CheckInteger(const IntegerRule& rule, std::int64_t value) {
  if (value >= rule.min && value <= rule.max) return Status::Ok();
  return InvalidInteger(rule, std::to_string(value), LooksLikeMilliseconds(rule, value));
}

Status ReadInteger(const IntegerRule& rule, const nlohmann::json& value, std::int64_t* out) {
  if (value.is_number_unsigned()) {
    const auto u = value.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return InvalidInteger(rule, std::to_string(u), false);
    }
    *out = static_cast<std::int64_t>(u);
  } else if (value.is_number_integer()) {
    *out = value.get<std::int64_t>();
  } else if (value.is_number_float()) {
    const double d = value.get<double>();
    // 2^63: every double below it in magnitude converts exactly to int64.
    constexpr double kLimit = 9223372036854775808.0;
    if (!std::isfinite(d) || std::trunc(d) != d || d >= kLimit || d < -kLimit) {
      return InvalidInteger(rule, BriefValue(value), false);
    }
    *out = static_cast<std::int64_t>(d);
  } else {
    return InvalidInteger(rule, BriefValue(value), false);
  }
  return CheckInteger(rule, *out);
}

Status ParseInteger(const IntegerRule& rule, std::string_view text, std::int64_t* out) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return InvalidInteger(
        rule, Truncate(json(text).dump(-1, ' ', false, json::error_handler_t::replace)), false);
  }
  *out = value;
  return CheckInteger(rule, value);
}

Status CheckTaskId(std::string_view id) {
  if (IsValidTaskId(id)) return Status::Ok();
  return Status::InvalidArgument("task_id", std::string(kTaskIdRule) + Got(BriefName(id, 128)));
}

Status CheckName(std::string_view field, std::string_view name) {
  if (IsValidName(name)) return Status::Ok();
  return Status::InvalidArgument(field, std::string(kNameRule) + Got(BriefName(name, 64)));
}

Status CheckPayloadText(std::string_view text, PayloadCheck check) {
  if (text.size() > kMaxPayloadBytes) {
    return Status::InvalidArgument(
        "payload", "must be at most " + std::to_string(kMaxPayloadBytes) + " bytes serialized" +
                       Got(std::to_string(text.size())));
  }
  if (check == PayloadCheck::kSizeOnly) return Status::Ok();
  if (!json::accept(text)) {
    try {
      const json parsed = json::parse(text);
      (void)parsed;
    } catch (const json::exception& e) {
      return Status::InvalidArgument("payload", "not valid JSON: " + ParseErrorMessage(e));
    }
    return Status::InvalidArgument("payload", "not valid JSON");
  }
  if (std::string_view type = TextTypeName(text); type != "object") {
    return Status::InvalidArgument("payload", "must be a JSON object" + Got(type));
  }
  return Status::Ok();
}

Status CheckExtra(const nlohmann::json& extra) {
  if (!extra.is_object()) {
    return Status::InvalidArgument("extra", "must be a JSON object" + Got(JsonTypeName(extra)));
  }
  for (const auto& [key, value] : extra.items()) {
    if (IsTaskField(key)) {
      return Status::InvalidArgument(
          "extra", "must not contain the contract field \"" + key + "\" (set the Task member)");
    }
  }
  if (auto it = extra.find("trace"); it != extra.end()) {
    if (Status s = CheckTrace(*it); !s.ok()) return s;
  }
  if (auto it = extra.find("headers"); it != extra.end()) {
    if (Status s = CheckHeaders(*it); !s.ok()) return s;
  }
  return Status::Ok();
}

std::string ParseErrorMessage(const nlohmann::json::exception& error) {
  std::string_view what = error.what();
  if (!what.empty() && what.front() == '[') {
    if (std::size_t close = what.find("] "); close != std::string_view::npos) {
      what.remove_prefix(close + 2);
    }
  }
  return std::string(what);
}

}  // namespace baton::internal::task_rules
