// Interposes the C++ runtime's __cxa_throw (every `throw` expression calls it) to record where a
// handler's exception was thrown: by the time a catch block runs, the thrower's frames are gone.
// The executable that links libbaton defines __cxa_throw, so both its own throws and those inside
// libstdc++ (std::vector::at, std::stoi, ...) come here first; this passes each on unchanged to
// the next definition (libstdc++'s, or a sanitizer's interceptor). Recording happens only on a
// thread running a handler (worker/failure_site.h).
//
// No header here declares __cxa_throw: <cxxabi.h> gives it a std::type_info* parameter, while the
// compiler's implicit declaration (used by every `throw`) takes void*.
#include <dlfcn.h>

#include <cstdlib>

#include "worker/failure_site.h"

namespace baton::internal {
// Referenced by FailureSiteScope: whoever links the worker runtime links this file too, even
// when a library earlier on the link line (a sanitizer's runtime) already defines __cxa_throw, so
// the linker would otherwise never pull this archive member in.
extern const bool kThrowHookLinked = true;
}  // namespace baton::internal

namespace {

using CxaThrow = void (*)(void*, void*, void (*)(void*));

CxaThrow NextCxaThrow() {
  static const CxaThrow next = reinterpret_cast<CxaThrow>(dlsym(RTLD_NEXT, "__cxa_throw"));
  return next;
}

}  // namespace

extern "C" [[noreturn]] void __cxa_throw(void* thrown_object, void* type, void (*destroy)(void*)) {
  baton::internal::NoteThrow(thrown_object);
  CxaThrow next = NextCxaThrow();
  if (next == nullptr) std::abort();  // no C++ runtime below us: cannot happen in a C++ program
  next(thrown_object, type, destroy);
  std::abort();  // __cxa_throw never returns
}
