#include "worker/stack_trace.h"

#include <backtrace.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <typeinfo>

namespace baton::internal {

namespace {

constexpr int kMaxFrames = 64;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

void IgnoreError(void*, const char*, int) {}

// One libbacktrace state for the process (it caches what it read of each binary's debug info).
backtrace_state* State() {
  static backtrace_state* state =
      backtrace_create_state(nullptr, /*threaded=*/1, IgnoreError, nullptr);
  return state;
}

// Held while frames are looked up. In threaded mode libbacktrace lets concurrent lookups each
// read the same debug info and keeps every copy (and leaks what it frees while another thread
// allocates): 16 handlers failing at once for the first time cost a C++ worker about 400 MiB
// instead of 35 (found by bench/soak). One lookup at a time keeps one copy.
std::mutex lookup_mutex;

struct NamedFrame {
  std::string function;  // demangled; "??" when unknown
  std::string where;     // "file:line", or "binary+0x1f"
};

// "binary+0xoffset" of an address, from the loader's map (works without any symbol table).
std::string BinaryOffset(std::uintptr_t pc) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(pc), &info) == 0 || info.dli_fname == nullptr) return "??";
  char offset[32];
  std::snprintf(offset, sizeof offset, "+0x%zx",
                static_cast<std::size_t>(pc - reinterpret_cast<std::uintptr_t>(info.dli_fbase)));
  return std::string(info.dli_fname) + offset;
}

void OnSymbol(void* data, std::uintptr_t, const char* symname, std::uintptr_t, std::uintptr_t) {
  if (symname != nullptr) *static_cast<std::string*>(data) = Demangle(symname);
}

int OnLine(void* data, std::uintptr_t pc, const char* filename, int lineno, const char* function) {
  auto* frames = static_cast<std::vector<NamedFrame>*>(data);
  NamedFrame f;
  if (function != nullptr) {
    f.function = Demangle(function);
  } else {
    backtrace_syminfo(State(), pc, OnSymbol, IgnoreError, &f.function);
  }
  if (f.function.empty()) f.function = "??";
  // Line 0: the compiler's own code (e.g. the ".cold" part of an optimised function); the file
  // still says where it belongs.
  if (filename == nullptr) {
    f.where = BinaryOffset(pc);
  } else {
    f.where = lineno > 0 ? std::string(filename) + ":" + std::to_string(lineno) : filename;
  }
  frames->push_back(std::move(f));
  return 0;
}

bool StartsWithAny(const std::string& name, const std::vector<std::string_view>& prefixes) {
  for (std::string_view p : prefixes) {
    if (std::string_view(name).substr(0, p.size()) == p) return true;
  }
  return false;
}

}  // namespace

std::string Demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, FreeDeleter> out(abi::__cxa_demangle(mangled, nullptr, nullptr, &status));
  if (status == 0 && out) return std::string(out.get());
  return std::string(mangled);
}

std::vector<void*> CaptureFrames() {
  void* frames[kMaxFrames];
  const int n = backtrace(frames, kMaxFrames);
  return std::vector<void*>(frames, frames + (n > 0 ? n : 0));
}

std::string FormatFrames(const std::vector<void*>& frames,
                         const std::vector<std::string_view>& skip_prefixes, int skip,
                         std::string_view stop_prefix) {
  static const std::vector<std::string_view> kMachinery = {
      "baton::internal::CaptureFrames", "baton::internal::CaptureStackTrace",
      "__interceptor_backtrace", "backtrace", "__sanitizer::"};
  std::vector<NamedFrame> named;
  std::unique_lock lookup(lookup_mutex);
  for (void* frame : frames) {
    // A return address points after its call: look up the call instruction itself.
    const auto pc = reinterpret_cast<std::uintptr_t>(frame) - 1;
    const std::size_t before = named.size();
    if (State() != nullptr) backtrace_pcinfo(State(), pc, OnLine, IgnoreError, &named);
    if (named.size() == before) OnLine(&named, pc, nullptr, 0, nullptr);
  }
  lookup.unlock();
  std::size_t first = 0;
  while (first < named.size() && (StartsWithAny(named[first].function, kMachinery) ||
                                  StartsWithAny(named[first].function, skip_prefixes))) {
    ++first;
  }
  first += static_cast<std::size_t>(skip > 0 ? skip : 0);
  std::string out;
  for (std::size_t i = first, shown = 0; i < named.size(); ++i, ++shown) {
    if (!stop_prefix.empty() && StartsWithAny(named[i].function, {stop_prefix})) break;
    out += "  #" + std::to_string(shown) + " " + named[i].function + " at " + named[i].where + "\n";
  }
  return out;
}

std::string CaptureStackTrace(int skip) { return FormatFrames(CaptureFrames(), {}, skip); }

std::string CurrentExceptionTypeName() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr) return "unknown";
  return Demangle(type->name());
}

}  // namespace baton::internal
