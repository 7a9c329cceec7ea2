#pragma once
// A per-thread hook on the construction of error Statuses. The worker runtime installs one on a
// handler's thread while the handler runs (worker/failure_site.h), so that a failed attempt's
// stack shows where the handler made the Status it returned, not only where the worker saw it.
#include "baton/status.h"

namespace baton::internal {

using ErrorStatusObserver = void (*)(const Status& status);

// Every non-OK Status constructed on this thread from now on is passed to `observer` (nullptr:
// none). The observer must not construct error Statuses itself.
void SetThreadErrorStatusObserver(ErrorStatusObserver observer);

}  // namespace baton::internal
