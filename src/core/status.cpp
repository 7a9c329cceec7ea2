#include "baton/status.h"

#include <string>

namespace baton {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kConflict:
      return "conflict";
    case StatusCode::kAlreadyExists:
      return "already_exists";
    case StatusCode::kVersionMismatch:
      return "version_mismatch";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kDeadlineExceeded:
      return "deadline_exceeded";
    case StatusCode::kCancelled:
      return "cancelled";
    case StatusCode::kResourceExhausted:
      return "resource_exhausted";
    case StatusCode::kInternal:
      return "internal";
  }
  return "unknown";
}

Status Status::InvalidArgument(std::string_view field, std::string_view rule) {
  std::string message;
  message.reserve(field.size() + 2 + rule.size());
  message.append(field).append(": ").append(rule);
  return {StatusCode::kInvalidArgument, std::move(message)};
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(StatusCodeName(code_));
  out.append(": ").append(message_);
  return out;
}

Status Status::WithContext(std::string_view operation) const {
  if (ok()) return *this;
  std::string message(operation);
  message.append(": ").append(message_);
  return {code_, std::move(message)};
}

}  // namespace baton
