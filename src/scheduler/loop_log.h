#pragma once
// How Baton's background loops (promoter, reaper, wake-up subscriber, type directory) report what
// happens to them: through a callback, so that batond renders their lines with its structured
// logger (text or JSON) and a program without a logger (a test) gets them on stderr. A loop reports
// an outage once, when it starts, and its recovery once, when it ends (OutageLog), never once per
// retry.
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "baton/status.h"

namespace baton::internal {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// One key=value of a log line. `number`: the value is a bare number (JSON without quotes).
struct LogAttr {
  std::string key;
  std::string value;
  bool number = false;
};

inline LogAttr NumberAttr(std::string key, long long value) {
  return {std::move(key), std::to_string(value), true};
}

// Receives one line: level, message, fields. Called on the loop's own thread; must be thread-safe.
using LogFn =
    std::function<void(LogLevel level, std::string_view message, const std::vector<LogAttr>&)>;

// The default sink: "baton: <message> key=value ..." on stderr (info and above).
LogFn StderrLog();

// Tracks one component's outage so that it is logged when it starts and when it ends.
class OutageLog {
 public:
  explicit OutageLog(std::string component) : component_(std::move(component)) {}

  // A pass failed: logs "<component> failed, retrying" (warn) if the component was healthy.
  void Failed(const LogFn& log, const Status& status, std::chrono::milliseconds retry_in);
  // A pass succeeded: logs "<component> recovered" (info) if the component was failing.
  void Succeeded(const LogFn& log);
  bool down() const { return down_; }

 private:
  std::string component_;
  bool down_ = false;
  std::chrono::steady_clock::time_point since_;
};

}  // namespace baton::internal
