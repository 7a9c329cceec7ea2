#include "log.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace baton::batond {

namespace {

std::atomic<LogFormat> g_format{LogFormat::kText};

bool NeedsQuotes(std::string_view s) {
  if (s.empty()) return true;
  for (char c : s) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      return true;
    }
  }
  return false;
}

void AppendLogfmtValue(std::string& out, const LogValue& value) {
  const std::string& s = value.text();
  if (value.bare() || !NeedsQuotes(s)) {
    out += s;
    return;
  }
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

std::string JsonString(std::string_view s) {
  // dump() escapes quotes and control characters; `replace` keeps invalid UTF-8 from throwing.
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

LogValue::LogValue(double v) : bare_(true) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  text_ = buf;
}

StatusOr<LogFormat> ParseLogFormat(std::string_view text) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  return Status::InvalidArgument("log-format",
                                 "must be text or json (got '" + std::string(text) + "')");
}

StatusOr<spdlog::level::level_enum> ParseLogLevel(std::string_view text) {
  static constexpr std::pair<std::string_view, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},   {"critical", spdlog::level::critical},
      {"off", spdlog::level::off}};
  for (const auto& [name, level] : kLevels) {
    if (text == name) return level;
  }
  return Status::InvalidArgument(
      "log-level",
      "must be trace, debug, info, warn, error, critical or off (got '" + std::string(text) + "')");
}

void SetupLogging(spdlog::level::level_enum level, LogFormat format) {
  g_format.store(format);
  auto logger =
      std::make_shared<spdlog::logger>("batond", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  if (format == LogFormat::kJson) {
    logger->set_pattern(R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l",%v})",
                        spdlog::pattern_time_type::utc);
  } else {
    logger->set_pattern("ts=%Y-%m-%dT%H:%M:%S.%eZ level=%l %v", spdlog::pattern_time_type::utc);
  }
  logger->set_level(level);
  // Logs are few (state changes and errors, not per task): flush each line so that an
  // orchestrator sees them at once.
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(std::move(logger));
}

std::string RenderLogLine(std::string_view msg, std::span<const LogField> fields) {
  std::string out;
  if (g_format.load() == LogFormat::kJson) {
    out += "\"msg\":";
    out += JsonString(msg);
    for (const auto& f : fields) {
      out += ',';
      out += JsonString(f.key);
      out += ':';
      out += f.value.bare() ? f.value.text() : JsonString(f.value.text());
    }
    return out;
  }
  out += "msg=";
  AppendLogfmtValue(out, LogValue(msg));
  for (const auto& f : fields) {
    out += ' ';
    out += f.key;
    out += '=';
    AppendLogfmtValue(out, f.value);
  }
  return out;
}

void Log(spdlog::level::level_enum level, std::string_view msg, std::span<const LogField> fields) {
  auto logger = spdlog::default_logger_raw();
  if (!logger->should_log(level)) return;
  logger->log(level, "{}", RenderLogLine(msg, fields));
}

}  // namespace baton::batond
