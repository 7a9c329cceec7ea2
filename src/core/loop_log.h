#pragma once
// How Baton's background threads (worker fetchers, heartbeats, maintenance; batond's promoter,
// reaper, wake-up subscriber, cron ticker) report what happens to them: through a LogFn, made from
// the application's Logger (include/baton/logger.h) or from batond's structured logger. A loop
// reports an outage once, when it starts, and its recovery once, when it ends (OutageLog), never
// once per retry.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "baton/logger.h"
#include "baton/status.h"

namespace baton::internal {

using LogLevel = baton::LogLevel;
using LogAttr = baton::LogField;

inline LogAttr NumberAttr(std::string key, long long value) {
  return NumberField(std::move(key), value);
}

// Receives one line: level, message, fields. Called on the loop's own thread; must be thread-safe.
// An empty LogFn logs nothing.
using LogFn =
    std::function<void(LogLevel level, std::string_view message, const std::vector<LogAttr>&)>;

// Forwards to `logger`; an empty LogFn when `logger` is null.
LogFn LogTo(std::shared_ptr<Logger> logger);

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
