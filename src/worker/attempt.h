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
// code is kInvalidArgument (what NonRetryable() returns). An exception is a failure whose message
// is "<dynamic type>: <what()>" (non_retryable for NonRetryableError); its stack is taken at the
// catch site, since C++ unwinds the throw site's frames before a handler can look at them.
AttemptOutcome RunAttempt(const Handler& handler, TaskContext& context);

// Inside a catch block: the failure for the exception being handled, `what` its message. Not
// inlined, so that stack traces always show a named frame (catch blocks land in a ".cold" clone
// of their function, a local symbol that backtrace_symbols() cannot name).
[[gnu::noinline]] AttemptOutcome OutcomeOfCurrentException(FailureKind kind,
                                                           const std::string& what);

// The outcome of an attempt that ran past its execution_timeout, whatever the handler returned.
AttemptOutcome TimeoutOutcome(int execution_timeout_s);

}  // namespace baton::internal
