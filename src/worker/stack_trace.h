#pragma once
// Stack traces for the failure records of baton_v2_fail (the `stack` of an attempt in
// baton:v2:{ns}:errors). glibc backtrace() + backtrace_symbols(), names demangled. Function names
// of the executable itself need it linked with -rdynamic (libbaton adds that to its users' links).
#include <string>

namespace baton::internal {

// The calling thread's stack, one frame per line ("  #3 baton::Foo(int) at /path/bin+0x1234"),
// innermost first, without the `skip` innermost frames (CaptureStackTrace itself is never shown).
std::string CaptureStackTrace(int skip = 0);

// The demangled form of a C++ mangled name, or `mangled` unchanged when it is not one.
std::string Demangle(const char* mangled);

// Inside a catch block: the demangled dynamic type of the exception being handled
// (abi::__cxa_current_exception_type), e.g. "std::runtime_error"; "unknown" outside one.
std::string CurrentExceptionTypeName();

}  // namespace baton::internal
