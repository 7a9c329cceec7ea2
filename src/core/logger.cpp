#include "baton/logger.h"

#include <cstdio>

namespace baton {
namespace {

// A logfmt value: as it is when it has no space, quote, '=' or control character; else quoted,
// with \ " and newlines escaped.
void AppendValue(std::string& line, const std::string& value) {
  bool plain = !value.empty();
  for (unsigned char c : value) {
    if (c <= ' ' || c == '"' || c == '=' || c == 0x7f) plain = false;
  }
  if (plain) {
    line.append(value);
    return;
  }
  line.push_back('"');
  for (char c : value) {
    if (c == '"' || c == '\\') {
      line.push_back('\\');
      line.push_back(c);
    } else if (c == '\n') {
      line.append("\\n");
    } else {
      line.push_back(c);
    }
  }
  line.push_back('"');
}

class StderrLogger final : public Logger {
 public:
  explicit StderrLogger(LogLevel min_level) : min_level_(min_level) {}

  void Log(LogLevel level, std::string_view message, const std::vector<LogField>& fields) override {
    if (level < min_level_) return;
    std::string line = "baton: ";
    line.append(LogLevelName(level)).append(" ").append(message);
    for (const LogField& f : fields) {
      line.append(" ").append(f.key).append("=");
      AppendValue(line, f.value);
    }
    line.push_back('\n');
    // One write per line, so lines of concurrent threads do not interleave.
    std::fwrite(line.data(), 1, line.size(), stderr);
  }

 private:
  LogLevel min_level_;
};

class NullLogger final : public Logger {
 public:
  void Log(LogLevel, std::string_view, const std::vector<LogField>&) override {}
};

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

std::shared_ptr<Logger> NewStderrLogger(LogLevel min_level) {
  return std::make_shared<StderrLogger>(min_level);
}

std::shared_ptr<Logger> NewNullLogger() { return std::make_shared<NullLogger>(); }

}  // namespace baton
