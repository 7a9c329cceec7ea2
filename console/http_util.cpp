#include "http_util.h"

#include <chrono>

#include "core/json_span.h"

namespace baton::console {

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void ReplyJson(httplib::Response& res, const nlohmann::json& body, int http_status) {
  res.status = http_status;
  res.set_header("Cache-Control", "no-store");
  // Invalid UTF-8 in stored text (payloads and errors are untrusted) is replaced, never fatal.
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

int HttpStatusOf(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kConflict:
    case StatusCode::kAlreadyExists:
      return 409;
    case StatusCode::kVersionMismatch:
    case StatusCode::kUnavailable:
    case StatusCode::kResourceExhausted:
      return 503;
    default:
      return 500;
  }
}

void ReplyError(httplib::Response& res, int http_status, const std::string& message) {
  ReplyJson(res, nlohmann::json{{"error", message}}, http_status);
}

void ReplyError(httplib::Response& res, const Status& status) {
  ReplyError(res, HttpStatusOf(status.code()), status.message());
}

StatusOr<nlohmann::json> JsonBody(const httplib::Request& req) {
  // A body nested this deep would overflow the stack wherever it is printed (an edited payload
  // goes into Redis and onto task pages).
  if (Status s = internal::CheckJsonDepth("body", req.body); !s.ok()) return s;
  nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return Status::InvalidArgument("body", "must be a JSON object");
  }
  return body;
}

StatusOr<std::string> RequiredText(const nlohmann::json& body, const char* name) {
  const auto it = body.find(name);
  if (it == body.end() || !it->is_string() || it->get<std::string>().empty()) {
    return Status::InvalidArgument(name, "is required and must be a non-empty string");
  }
  return it->get<std::string>();
}

StatusOr<std::optional<std::string>> OptionalText(const nlohmann::json& body, const char* name) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return std::optional<std::string>();
  if (!it->is_string()) return Status::InvalidArgument(name, "must be a string");
  if (it->get<std::string>().empty()) return std::optional<std::string>();
  return std::optional<std::string>(it->get<std::string>());
}

StatusOr<std::optional<std::int64_t>> OptionalInt(const nlohmann::json& body, const char* name,
                                                  std::int64_t min, std::int64_t max) {
  const auto it = body.find(name);
  if (it == body.end() || it->is_null()) return std::optional<std::int64_t>();
  if (!it->is_number_integer() || it->get<std::int64_t>() < min || it->get<std::int64_t>() > max) {
    return Status::InvalidArgument(
        name, "must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return std::optional<std::int64_t>(it->get<std::int64_t>());
}

std::string CookieValue(const httplib::Request& req, const std::string& name) {
  const std::string header = req.get_header_value("Cookie");
  std::size_t pos = 0;
  while (pos < header.size()) {
    std::size_t end = header.find(';', pos);
    if (end == std::string::npos) end = header.size();
    std::string_view part(header.data() + pos, end - pos);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    if (part.size() > name.size() && part.starts_with(name) && part[name.size()] == '=') {
      return std::string(part.substr(name.size() + 1));
    }
    pos = end + 1;
  }
  return "";
}

}  // namespace baton::console
