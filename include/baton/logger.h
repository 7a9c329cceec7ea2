#pragma once
// Where Baton's library code reports what happens in its own threads (a lost Redis connection, a
// failed heartbeat, a recovery): through a Logger the application provides, like leveldb's
// Options::info_log. Baton never writes to stderr by itself; pass NewStderrLogger() for that.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace baton {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// "debug", "info", "warn", "error".
std::string_view LogLevelName(LogLevel level);

// One key=value of a log line. `number`: the value is a bare number (JSON without quotes).
struct LogField {
  std::string key;
  std::string value;
  bool number = false;
};

inline LogField NumberField(std::string key, long long value) {
  return {std::move(key), std::to_string(value), true};
}

class Logger {
 public:
  virtual ~Logger() = default;
  // One event: a short constant message ("heartbeat failed") and its fields ("ns", "error", ...).
  // Called from Baton's threads, possibly at once: implementations must be thread-safe and quick.
  virtual void Log(LogLevel level, std::string_view message,
                   const std::vector<LogField>& fields) = 0;
};

// Lines "baton: <level> <message> key=value ..." on stderr, for `min_level` and above (a value
// with spaces, quotes or '=' is quoted, logfmt style).
std::shared_ptr<Logger> NewStderrLogger(LogLevel min_level = LogLevel::kInfo);

// Drops everything: the default of every options struct that takes a logger.
std::shared_ptr<Logger> NewNullLogger();

}  // namespace baton
