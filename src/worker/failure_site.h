#pragma once
// Where a handler's failure was made, for the stack of a failed attempt (the worker's own frames
// are the same for every failure and say nothing). While a FailureSiteScope is alive on a thread:
//  - every C++ throw records its stack (libbaton interposes __cxa_throw: worker/throw_hook.cpp);
//  - every error Status constructed records its stack (core/status_observer.h).
// Only return addresses are recorded (one unwind, about a microsecond); names are looked up when
// a failure is reported. Outside a scope nothing is recorded and a throw costs one branch more.
#include <string>

#include "baton/status.h"

namespace baton::internal {

// Records failure sites on this thread while alive (RunAttempt holds one around the handler).
class FailureSiteScope {
 public:
  FailureSiteScope();
  ~FailureSiteScope();
  FailureSiteScope(const FailureSiteScope&) = delete;
  FailureSiteScope& operator=(const FailureSiteScope&) = delete;
};

// The stack where `thrown_object` (the complete exception object, e.g. dynamic_cast<const
// void*>(&e)) was thrown in the current scope, from the throw down to the handler's caller; with
// nullptr, the stack of the last throw in the scope. "" when nothing matching was recorded.
std::string ThrowSiteOf(const void* thrown_object);

// The stack where an error Status with `status`'s code and message was last made in the current
// scope, from where it was made down to the handler's caller. "" when none was.
std::string SiteOfStatus(const Status& status);

// Called by the __cxa_throw interposer (worker/throw_hook.cpp) for every throw in the process.
void NoteThrow(void* thrown_object) noexcept;

}  // namespace baton::internal
