#include "core/loop_log.h"

namespace baton::internal {

LogFn LogTo(std::shared_ptr<Logger> logger) {
  if (!logger) return {};
  return [logger = std::move(logger)](LogLevel level, std::string_view message,
                                      const std::vector<LogAttr>& attrs) {
    logger->Log(level, message, attrs);
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
