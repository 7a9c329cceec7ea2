#pragma once
// Stack traces for the failure records of baton_v2_fail (the `stack` of an attempt in
// baton:v2:{ns}:errors). Frames are taken with glibc's backtrace() (cheap: return addresses only)
// and named later with GCC's libbacktrace, which reads the binaries' own symbol tables and DWARF:
// "function at file:line" where debug info exists, "function at binary+0x1f" otherwise. No
// -rdynamic is needed for the executable's own functions.
#include <string>
#include <string_view>
#include <vector>

namespace baton::internal {

// Return addresses of the calling thread's stack, innermost first (CaptureFrames and the
// sanitizers' backtrace() interceptor included: FormatFrames leaves them out).
[[gnu::noinline]] std::vector<void*> CaptureFrames();

// Names `frames` one per line ("  #3 baton::Foo(int) at src/foo.cpp:12"), inlined calls as
// frames of their own, innermost first. Leading frames of the capture machinery and those whose
// function name starts with one of `skip_prefixes` are left out, then `skip` more; the list ends
// before the first frame whose function name starts with `stop_prefix` (e.g. the worker's own
// frames below a handler), when given.
std::string FormatFrames(const std::vector<void*>& frames,
                         const std::vector<std::string_view>& skip_prefixes = {}, int skip = 0,
                         std::string_view stop_prefix = {});

// The calling thread's stack, formatted, without the `skip` innermost frames (CaptureStackTrace
// itself is never shown).
[[gnu::noinline]] std::string CaptureStackTrace(int skip = 0);

// The demangled form of a C++ mangled name, or `mangled` unchanged when it is not one.
std::string Demangle(const char* mangled);

// Inside a catch block: the demangled dynamic type of the exception being handled
// (abi::__cxa_current_exception_type), e.g. "std::runtime_error"; "unknown" outside one.
std::string CurrentExceptionTypeName();

}  // namespace baton::internal
