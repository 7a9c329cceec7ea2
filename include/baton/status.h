#pragma once
// Expected failures are values. A Status carries a code (one to one with the error codes in
// contract/errors.json and the Lua error replies) and a message that starts with the operation (see
// WithContext) and names the offending field and the rule. ToString() of a failed enqueue reads
// "invalid_argument: enqueue: max_retry: must be an integer 0..25 (got 99)".
#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace baton {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // BATON_INVALID
  kNotFound,           // BATON_NOT_FOUND
  kConflict,           // BATON_CONFLICT
  kAlreadyExists,      // duplicate task id / held unique key
  kVersionMismatch,    // functions library version differs from the client's
  kUnavailable,        // Redis unreachable or the connection broke
  kDeadlineExceeded,   // an attempt ran past its execution_timeout
  kCancelled,          // the work was cancelled (shutdown, lease lost)
  kResourceExhausted,  // Redis refused a write: OOM (maxmemory reached)
  kInternal,           // unexpected reply: a bug
  kNonRetryable,       // a handler's permanent failure (NonRetryable()): never retried
};

// True for the codes where the same call may succeed later without a change by the caller:
// kUnavailable (unreachable, LOADING, BUSY, READONLY replica, cluster down) and
// kResourceExhausted (OOM).
inline bool IsRetryable(StatusCode code) {
  return code == StatusCode::kUnavailable || code == StatusCode::kResourceExhausted;
}

// "ok", "invalid_argument", ... as in contract/errors.json (plus "deadline_exceeded" and
// "cancelled", which never cross the Redis boundary).
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }
  // kInvalidArgument with the message "field: rule", the form every contract violation takes.
  static Status InvalidArgument(std::string_view field, std::string_view rule);
  static Status NotFound(std::string message) {
    return {StatusCode::kNotFound, std::move(message)};
  }
  static Status Conflict(std::string message) {
    return {StatusCode::kConflict, std::move(message)};
  }
  static Status Unavailable(std::string message) {
    return {StatusCode::kUnavailable, std::move(message)};
  }
  static Status Internal(std::string message) {
    return {StatusCode::kInternal, std::move(message)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "code: message", or "ok".
  std::string ToString() const;
  // A copy whose message is prefixed with the operation: "enqueue: " + message. OK stays OK.
  Status WithContext(std::string_view operation) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
namespace internal {
// Prints "StatusOr::value() called on an error: <status>" to stderr and aborts, in every build
// type: reading a value that is not there is a bug to find at once, not undefined behaviour.
[[noreturn]] void DieOnMissingValue(const Status& status);
// The error a StatusOr made from an OK Status holds instead (a bug in the caller).
Status OkStatusWithoutValue();
}  // namespace internal

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  // An OK `status` carries no value: it becomes kInternal "StatusOr made from an OK Status".
  StatusOr(Status status)  // NOLINT: implicit by design
      : status_(status.ok() ? internal::OkStatusWithoutValue() : std::move(status)) {}

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    if (!ok()) internal::DieOnMissingValue(status_);
    return *value_;
  }
  const T& value() const& {
    if (!ok()) internal::DieOnMissingValue(status_);
    return *value_;
  }
  T&& value() && {
    if (!ok()) internal::DieOnMissingValue(status_);
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace baton
