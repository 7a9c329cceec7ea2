#include "worker/attempt.h"

#include <exception>

#include "worker/failure_site.h"
#include "worker/stack_trace.h"

namespace baton {

Status NonRetryable(std::string message) {
  return Status(StatusCode::kNonRetryable, std::move(message));
}

}  // namespace baton

namespace baton::internal {

AttemptOutcome OutcomeOfCurrentException(FailureKind kind, const std::string& what,
                                         const void* thrown_object) {
  AttemptOutcome out;
  out.failure = kind;
  out.message = CurrentExceptionTypeName() + ": " + what;
  std::string site = ThrowSiteOf(thrown_object);
  if (!site.empty()) {
    out.stack = "exception " + out.message + "\nthrown at:\n" + site;
  } else {
    // Not thrown through __cxa_throw on this thread (e.g. rethrown from another thread's
    // exception_ptr): all that is left is where the worker caught it.
    out.stack = "exception " + out.message + "\ncaught in the worker at:\n" + CaptureStackTrace();
  }
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
  FailureSiteScope sites;
  try {
    Status status = handler(context);
    if (status.ok()) return {};
    AttemptOutcome out;
    out.failure = status.code() == StatusCode::kNonRetryable ? FailureKind::kNonRetryable
                                                             : FailureKind::kError;
    out.message = status.ToString();
    std::string site = SiteOfStatus(status);
    if (!site.empty()) {
      out.stack = "handler returned " + out.message + "\nmade at:\n" + site;
    } else {
      out.stack = "handler returned " + out.message + "\nobserved in the worker at:\n" +
                  CaptureStackTrace(1);
    }
    return out;
  } catch (const NonRetryableError& e) {
    return OutcomeOfCurrentException(FailureKind::kNonRetryable, e.what(),
                                     dynamic_cast<const void*>(&e));
  } catch (const std::exception& e) {
    return OutcomeOfCurrentException(FailureKind::kError, e.what(), dynamic_cast<const void*>(&e));
  } catch (...) {
    return OutcomeOfCurrentException(FailureKind::kError, "(not a std::exception)", nullptr);
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
