#include "worker/attempt.h"

#include <exception>

#include "worker/stack_trace.h"

namespace baton {

Status NonRetryable(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}

}  // namespace baton

namespace baton::internal {

AttemptOutcome OutcomeOfCurrentException(FailureKind kind, const std::string& what) {
  AttemptOutcome out;
  out.failure = kind;
  out.message = CurrentExceptionTypeName() + ": " + what;
  // Taken inside the catch block: the frames of the code that threw are already unwound, so this
  // shows where the worker caught it (the handler's caller), not the throw site.
  out.stack = "exception " + out.message + "\ncaught in the worker at:\n" + CaptureStackTrace();
  return out;
}

std::string_view FailureKindName(FailureKind kind) {
  switch (kind) {
    case FailureKind::kNone:
      return "";
    case FailureKind::kError:
      return "error";
    case FailureKind::kNonRetryable:
      return "non_retryable";
    case FailureKind::kTimeout:
      return "timeout";
    case FailureKind::kMalformed:
      return "malformed";
  }
  return "error";
}

AttemptOutcome RunAttempt(const Handler& handler, TaskContext& context) {
  try {
    Status status = handler(context);
    if (status.ok()) return {};
    AttemptOutcome out;
    out.failure = status.code() == StatusCode::kInvalidArgument ? FailureKind::kNonRetryable
                                                                : FailureKind::kError;
    out.message = status.ToString();
    // A returned Status carries no stack of its own: record where the worker observed it.
    out.stack =
        "handler returned " + out.message + "\nobserved in the worker at:\n" + CaptureStackTrace(1);
    return out;
  } catch (const NonRetryableError& e) {
    return OutcomeOfCurrentException(FailureKind::kNonRetryable, e.what());
  } catch (const std::exception& e) {
    return OutcomeOfCurrentException(FailureKind::kError, e.what());
  } catch (...) {
    return OutcomeOfCurrentException(FailureKind::kError, "(not a std::exception)");
  }
}

AttemptOutcome TimeoutOutcome(int execution_timeout_s) {
  AttemptOutcome out;
  out.failure = FailureKind::kTimeout;
  out.message = "execution_timeout of " + std::to_string(execution_timeout_s) + "s exceeded";
  out.stack = "attempt stopped by the worker's watchdog at:\n" + CaptureStackTrace(1);
  return out;
}

}  // namespace baton::internal
