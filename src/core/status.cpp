#include "baton/status.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/status_observer.h"

namespace baton {

namespace {
thread_local internal::ErrorStatusObserver t_error_status_observer = nullptr;
}  // namespace

Status::Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {
  if (code_ != StatusCode::kOk && t_error_status_observer != nullptr) {
    // Cleared while it runs, so an error Status made by the observer itself cannot recurse.
    internal::ErrorStatusObserver observer = t_error_status_observer;
    t_error_status_observer = nullptr;
    observer(*this);
    t_error_status_observer = observer;
  }
}

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
    case StatusCode::kNonRetryable:
      return "non_retryable";
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

namespace baton::internal {

void SetThreadErrorStatusObserver(ErrorStatusObserver observer) {
  t_error_status_observer = observer;
}

void DieOnMissingValue(const Status& status) {
  std::fprintf(stderr, "StatusOr::value() called on an error: %s\n", status.ToString().c_str());
  std::abort();
}

Status OkStatusWithoutValue() {
  return Status::Internal("StatusOr made from an OK Status (a bug: return a value or an error)");
}

}  // namespace baton::internal
