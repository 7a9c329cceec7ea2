#include "cli_context.h"

#include <iostream>
#include <nlohmann/json.hpp>

namespace baton::cli {

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kNotFound:
      return kExitNotFound;
    case StatusCode::kConflict:
    case StatusCode::kAlreadyExists:
    case StatusCode::kVersionMismatch:
      return kExitConflict;
    default:
      return kExitError;
  }
}

namespace {

// The URL without its password ("redis://user:***@host:6379"), for messages.
std::string Redacted(const std::string& url) {
  std::size_t scheme = url.find("://");
  std::size_t at = url.rfind('@');
  if (scheme == std::string::npos || at == std::string::npos || at < scheme) return url;
  std::size_t colon = url.find(':', scheme + 3);
  std::size_t secret = colon != std::string::npos && colon < at ? colon + 1 : scheme + 3;
  return url.substr(0, secret) + "***" + url.substr(at);
}

}  // namespace

namespace {

// "baton COMMAND: " ("baton: " before a command was named).
std::string LinePrefix(std::string_view command) {
  return command.empty() ? "baton: " : "baton " + std::string(command) + ": ";
}

// JSON never aborts on bytes that are not UTF-8 (they may come from Redis): they become U+FFFD.
std::string Dump(const nlohmann::json& document) {
  return document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

int Context::Fail(std::string_view command, const Status& status, std::string_view hint) {
  std::string line = LinePrefix(command) + status.ToString();
  std::string help(hint);
  if (help.empty() && status.code() == StatusCode::kUnavailable) {
    help =
        "Is Redis running at " + Redacted(global.redis.url) + "? Set --redis or BATON_REDIS_URL.";
  }
  std::cerr << line << (help.empty() ? "" : "\n  " + help) << "\n";
  int code = ExitCodeFor(status);
  if (global.json) {
    nlohmann::json error = {{"code", StatusCodeName(status.code())},
                            {"message", status.message()},
                            {"exit_code", code}};
    if (!help.empty()) error["hint"] = help;
    std::cout << Dump(nlohmann::json{{"error", error}}) << "\n";
  }
  exit_code = code;
  return code;
}

int Context::Usage(std::string_view command, std::string_view message) {
  std::cerr << LinePrefix(command) << message << "\n  Run 'baton "
            << (command.empty() ? "" : std::string(command) + " ") << "--help' for the options.\n";
  if (global.json) {
    std::cout << Dump(nlohmann::json{{"error",
                                      {{"code", "usage"},
                                       {"message", std::string(message)},
                                       {"exit_code", kExitUsage}}}})
              << "\n";
  }
  exit_code = kExitUsage;
  return kExitUsage;
}

StatusOr<std::unique_ptr<Inspector>> Context::OpenInspector(InspectorOptions options) {
  options.redis = global.redis;
  return Inspector::Connect(options);
}

StatusOr<std::unique_ptr<Client>> Context::OpenClient() {
  ClientOptions options;
  options.redis = global.redis;
  return Client::Connect(options);
}

StatusOr<std::unique_ptr<internal::RedisConnection>> Context::OpenConnection() {
  auto endpoint = internal::RedisEndpoint::FromOptions(global.redis);
  if (!endpoint.ok()) return endpoint.status();
  return internal::RedisConnection::Open(*endpoint);
}

}  // namespace baton::cli
