#include "scheduler/loop_log.h"

#include <cstdio>

namespace baton::internal {

LogFn StderrLog() {
  return [](LogLevel level, std::string_view message, const std::vector<LogAttr>& attrs) {
    if (level == LogLevel::kDebug) return;
    std::string line = "baton: ";
    line.append(message);
    for (const LogAttr& a : attrs) line.append(" ").append(a.key).append("=").append(a.value);
    std::fprintf(stderr, "%s\n", line.c_str());
  };
}

void OutageLog::Failed(const LogFn& log, const Status& status, std::chrono::milliseconds retry_in) {
  if (down_) return;
  down_ = true;
  since_ = std::chrono::steady_clock::now();
  if (log) {
    log(LogLevel::kWarn, component_ + " failed, retrying",
        {{"component", component_},
         {"error", status.ToString()},
         NumberAttr("retry_in_ms", retry_in.count())});
  }
}

void OutageLog::Succeeded(const LogFn& log) {
  if (!down_) return;
  down_ = false;
  if (log) {
    auto down_for = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - since_);
    log(LogLevel::kInfo, component_ + " recovered",
        {{"component", component_}, NumberAttr("down_ms", down_for.count())});
  }
}

}  // namespace baton::internal
