#include "option_rules.h"

#include <string>

#include "core/task_rules.h"
#include "time_arg.h"

namespace baton::cli {

namespace {

// The rule of "field: rule" (the option name is CLI11's to add).
std::string RuleOf(const Status& status, std::string_view field) {
  const std::string& message = status.message();
  std::string prefix = std::string(field) + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

}  // namespace

CLI::Validator IntegerIn(std::int64_t min, std::int64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        const internal::task_rules::IntegerRule rule{"value", "must be an integer", min, max};
        std::int64_t value = 0;
        Status s = internal::task_rules::ParseInteger(rule, text, &value);
        return s.ok() ? "" : RuleOf(s, rule.field);
      },
      "INT in " + std::to_string(min) + ".." + std::to_string(max));
}

CLI::Validator ZeroOrIntegerIn(std::int64_t min, std::int64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        const internal::task_rules::IntegerRule rule{"value", "must be an integer", 0, max};
        std::int64_t value = 0;
        Status s = internal::task_rules::ParseInteger(rule, text, &value);
        if (s.ok() && (value == 0 || value >= min)) return "";
        return "must be 0 or an integer " + std::to_string(min) + ".." + std::to_string(max) +
               " (got " + text + ")";
      },
      "0 or INT in " + std::to_string(min) + ".." + std::to_string(max));
}

CLI::Validator UnixSecondsArg() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        auto seconds = ParseUnixSecondsArg("at", text);
        return seconds.ok() ? "" : RuleOf(seconds.status(), "at");
      },
      "UNIX_SECONDS");
}

CLI::Validator TaskIdArg() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        Status s = internal::task_rules::CheckTaskId(text);
        return s.ok() ? "" : RuleOf(s, "task_id");
      },
      "TASK_ID");
}

}  // namespace baton::cli
