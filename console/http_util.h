#pragma once
// Small helpers of the console's HTTP handlers: JSON answers, statuses to HTTP codes, query and
// body parameters that name the field and the rule when they are wrong.
#include <httplib.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "baton/status.h"
#include "http_params.h"

namespace baton::console {

std::int64_t NowMs();

// 200 with the JSON body.
void ReplyJson(httplib::Response& res, const nlohmann::json& body, int http_status = 200);
// {"error": message} with the HTTP code of the status (400, 404, 409, 503, ...).
void ReplyError(httplib::Response& res, const Status& status);
void ReplyError(httplib::Response& res, int http_status, const std::string& message);
int HttpStatusOf(StatusCode code);

template <typename T>
void Reply(httplib::Response& res, const StatusOr<T>& result) {
  if (result.ok()) {
    ReplyJson(res, *result);
  } else {
    ReplyError(res, result.status());
  }
}

// Query parameters: the collector's helpers (empty = absent; errors name the parameter).
using collector::IntParam;
using collector::TextParam;

// The request body as a JSON object (kInvalidArgument "body: must be a JSON object").
StatusOr<nlohmann::json> JsonBody(const httplib::Request& req);
// body[name] as a string: required, or optional (nullopt when absent or null).
StatusOr<std::string> RequiredText(const nlohmann::json& body, const char* name);
StatusOr<std::optional<std::string>> OptionalText(const nlohmann::json& body, const char* name);
StatusOr<std::optional<std::int64_t>> OptionalInt(const nlohmann::json& body, const char* name,
                                                  std::int64_t min, std::int64_t max);

// The value of cookie `name` in the request's Cookie header; "" when absent.
std::string CookieValue(const httplib::Request& req, const std::string& name);

inline constexpr std::int64_t kMaxMs = 253402300799999;  // 9999-12-31

}  // namespace baton::console
