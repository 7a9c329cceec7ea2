#include "worker/stack_trace.h"

#include <cxxabi.h>
#include <execinfo.h>

#include <cstdlib>
#include <memory>
#include <typeinfo>
#include <vector>

namespace baton::internal {

namespace {

constexpr int kMaxFrames = 64;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// backtrace_symbols() gives "binary(mangled+0x1f) [0x55d1...]" (or "binary(+0x1f)" / "binary
// [0x...]" when the symbol is unknown). Returns a readable "name at binary+offset".
std::string FormatFrame(const char* symbol) {
  std::string text(symbol);
  std::size_t open = text.find('(');
  std::size_t plus = text.find('+', open == std::string::npos ? 0 : open);
  std::size_t close = text.find(')', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return text;
  std::string binary = text.substr(0, open);
  std::string name;
  std::string offset;
  if (plus != std::string::npos && plus < close) {
    name = text.substr(open + 1, plus - open - 1);
    offset = text.substr(plus, close - plus);
  } else {
    name = text.substr(open + 1, close - open - 1);
  }
  if (name.empty()) return "?? at " + binary + offset;
  return Demangle(name.c_str()) + " at " + binary + offset;
}

}  // namespace

std::string Demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, FreeDeleter> out(abi::__cxa_demangle(mangled, nullptr, nullptr, &status));
  if (status == 0 && out) return std::string(out.get());
  return std::string(mangled);
}

std::string CaptureStackTrace(int skip) {
  void* frames[kMaxFrames];
  int n = backtrace(frames, kMaxFrames);
  std::unique_ptr<char*, FreeDeleter> symbols(backtrace_symbols(frames, n));
  std::vector<std::string> frames_text;
  frames_text.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    frames_text.push_back(symbols ? FormatFrame(symbols.get()[i]) : std::string("??"));
  }
  // Frame 0 is normally this function, but a sanitizer's backtrace() interceptor may come first:
  // start after the last frame that is CaptureStackTrace itself.
  int self = 0;
  for (int i = 0; i < n && i < 4; ++i) {
    if (frames_text[static_cast<std::size_t>(i)].rfind("baton::internal::CaptureStackTrace", 0) ==
        0) {
      self = i;
    }
  }
  std::string out;
  const int first = self + 1 + (skip > 0 ? skip : 0);
  for (int i = first; i < n; ++i) {
    out +=
        "  #" + std::to_string(i - first) + " " + frames_text[static_cast<std::size_t>(i)] + "\n";
  }
  return out;
}

std::string CurrentExceptionTypeName() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr) return "unknown";
  return Demangle(type->name());
}

}  // namespace baton::internal
