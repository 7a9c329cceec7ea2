#include "worker/failure_site.h"

#include <deque>
#include <string_view>
#include <vector>

#include "core/status_observer.h"
#include "worker/stack_trace.h"

namespace baton::internal {

extern const bool kThrowHookLinked;  // worker/throw_hook.cpp

namespace {

// The worker's frames below a handler: where every failure site's listing stops.
constexpr std::string_view kHandlerCaller = "baton::internal::RunAttempt";
// Error Statuses remembered per attempt: a handler usually returns one of its last few.
constexpr std::size_t kKeptStatuses = 8;

struct StatusSite {
  StatusCode code;
  std::string message;
  std::vector<void*> frames;
};

struct Sites {
  bool active = false;
  bool busy = false;  // recording now: a throw or Status made while recording is not recorded
  const void* thrown = nullptr;
  std::vector<void*> throw_frames;
  std::deque<StatusSite> statuses;  // newest last
};

thread_local Sites t_sites;

void ObserveErrorStatus(const Status& status) {
  Sites& s = t_sites;
  if (!s.active || s.busy) return;
  s.busy = true;
  try {
    s.statuses.push_back({status.code(), status.message(), CaptureFrames()});
    if (s.statuses.size() > kKeptStatuses) s.statuses.pop_front();
  } catch (...) {
    // Out of memory while recording: the failure keeps the worker's own stack instead.
  }
  s.busy = false;
}

}  // namespace

FailureSiteScope::FailureSiteScope() {
  t_sites = Sites{};
  t_sites.active = kThrowHookLinked;
  SetThreadErrorStatusObserver(ObserveErrorStatus);
}

FailureSiteScope::~FailureSiteScope() {
  SetThreadErrorStatusObserver(nullptr);
  t_sites = Sites{};
}

void NoteThrow(void* thrown_object) noexcept {
  Sites& s = t_sites;
  if (!s.active || s.busy) return;
  s.busy = true;
  try {
    s.throw_frames = CaptureFrames();
    s.thrown = thrown_object;
  } catch (...) {
    s.thrown = nullptr;
  }
  s.busy = false;
}

std::string ThrowSiteOf(const void* thrown_object) {
  const Sites& s = t_sites;
  if (s.thrown == nullptr || (thrown_object != nullptr && thrown_object != s.thrown)) return "";
  return FormatFrames(s.throw_frames, {"baton::internal::NoteThrow", "NoteThrow", "__cxa_throw"}, 0,
                      kHandlerCaller);
}

std::string SiteOfStatus(const Status& status) {
  const Sites& s = t_sites;
  for (auto it = s.statuses.rbegin(); it != s.statuses.rend(); ++it) {
    if (it->code == status.code() && it->message == status.message()) {
      // A function of internal linkage carries its plain DWARF name ("ObserveErrorStatus").
      return FormatFrames(it->frames,
                          {"baton::internal::(anonymous namespace)::ObserveErrorStatus",
                           "ObserveErrorStatus", "baton::Status::"},
                          0, kHandlerCaller);
    }
  }
  return "";
}

}  // namespace baton::internal
