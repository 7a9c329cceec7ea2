#pragma once
// batond's structured logs: one line per event, `msg` plus key=value fields, rendered as logfmt
// (`ts=... level=info msg=promoted ns=orders count=3`) or as one JSON object per line. spdlog does
// the I/O; this file only owns the two line formats.
#include <spdlog/spdlog.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "baton/status.h"

namespace baton::batond {

enum class LogFormat { kText, kJson };

// Parses "text" / "json". kInvalidArgument names the setting otherwise.
StatusOr<LogFormat> ParseLogFormat(std::string_view text);
// Parses "trace", "debug", "info", "warn", "error", "critical", "off".
StatusOr<spdlog::level::level_enum> ParseLogLevel(std::string_view text);

// Installs a default spdlog logger writing to stderr in `format` at `level`. Call once, before
// any other thread logs.
void SetupLogging(spdlog::level::level_enum level, LogFormat format);

// One field value: a string (quoted when needed), or a number / bool (bare in both formats).
class LogValue {
 public:
  LogValue(std::string_view s) : text_(s), bare_(false) {}          // NOLINT: implicit by design
  LogValue(const std::string& s) : text_(s), bare_(false) {}        // NOLINT
  LogValue(const char* s) : text_(s), bare_(false) {}               // NOLINT
  LogValue(bool b) : text_(b ? "true" : "false"), bare_(true) {}    // NOLINT
  LogValue(int v) : text_(std::to_string(v)), bare_(true) {}        // NOLINT
  LogValue(long v) : text_(std::to_string(v)), bare_(true) {}       // NOLINT
  LogValue(long long v) : text_(std::to_string(v)), bare_(true) {}  // NOLINT
  LogValue(unsigned long v) : text_(std::to_string(v)), bare_(true) {}       // NOLINT
  LogValue(unsigned long long v) : text_(std::to_string(v)), bare_(true) {}  // NOLINT
  LogValue(double v);                                                        // NOLINT
  // Text as it is: `bare` renders it without quotes (a number already formatted).
  LogValue(std::string text, bool bare) : text_(std::move(text)), bare_(bare) {}

  const std::string& text() const { return text_; }
  bool bare() const { return bare_; }

 private:
  std::string text_;
  bool bare_;
};

struct LogField {
  std::string_view key;
  LogValue value;
};

// The message part of a line (everything after the timestamp and level), in the active format.
std::string RenderLogLine(std::string_view msg, std::span<const LogField> fields);
inline std::string RenderLogLine(std::string_view msg, std::initializer_list<LogField> fields) {
  return RenderLogLine(msg, std::span<const LogField>(fields.begin(), fields.size()));
}

// Logs `msg` with `fields` at `level` through the default logger.
void Log(spdlog::level::level_enum level, std::string_view msg, std::span<const LogField> fields);
inline void Log(spdlog::level::level_enum level, std::string_view msg,
                std::initializer_list<LogField> fields = {}) {
  Log(level, msg, std::span<const LogField>(fields.begin(), fields.size()));
}

}  // namespace baton::batond
