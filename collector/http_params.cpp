#include "http_params.h"

#include <charconv>

namespace baton::collector {

StatusOr<std::optional<std::int64_t>> IntParam(const httplib::Request& req, const char* name,
                                               std::int64_t min, std::int64_t max) {
  if (!req.has_param(name) || req.get_param_value(name).empty()) {
    return std::optional<std::int64_t>();
  }
  const std::string text = req.get_param_value(name);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return Status::InvalidArgument(
        name, "must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return std::optional<std::int64_t>(value);
}

std::optional<std::string> TextParam(const httplib::Request& req, const char* name) {
  if (!req.has_param(name) || req.get_param_value(name).empty()) return std::nullopt;
  return req.get_param_value(name);
}

}  // namespace baton::collector
