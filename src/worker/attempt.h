#pragma once
// Runs one handler attempt and turns what happened into the arguments of baton_v2_ack /
// baton_v2_fail: success, or a failure kind ("error", "non_retryable", "timeout", "malformed"), a
// message and a stack trace. Never throws.
#include <string>
#include <string_view>

#include "baton/worker.h"

namespace baton::internal {

enum class FailureKind { kNone, kError, kNonRetryable, kTimeout, kMalformed };

// The kind as baton_v2_fail spells it ("error", ...); "" for kNone.
std::string_view FailureKindName(FailureKind kind);

struct AttemptOutcome {
  FailureKind failure = FailureKind::kNone;  // kNone: the handler returned OK
  std::string message;
  std::string stack;
};

// Calls `handler(context)`. A non-OK Status is a failure of kind error, or non_retryable when its
// code is kNonRetryable (what NonRetryable() returns); its stack is where the handler made that
// Status. An exception is a failure whose message is "<dynamic type>: <what()>" (non_retryable
// for NonRetryableError); its stack is where it was thrown (worker/failure_site.h).
AttemptOutcome RunAttempt(const Handler& handler, TaskContext& context);

// Inside a catch block: the failure for the exception being handled, `what` its message and
// `thrown_object` its complete object (nullptr when unknown, e.g. catch (...)).
AttemptOutcome OutcomeOfCurrentException(FailureKind kind, const std::string& what,
                                         const void* thrown_object);

// The outcome of an attempt that ran past its execution_timeout, whatever the handler returned.
AttemptOutcome TimeoutOutcome(int execution_timeout_s);

}  // namespace baton::internal
