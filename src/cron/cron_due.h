#pragma once
// Which ticks of a cron job a scheduler enqueues on one pass: the missed-tick policy in one pure
// function, so the scheduler loop stays a thin wrapper and the policy is tested without a clock.
#include <chrono>
#include <vector>

#include "cron/cron_job.h"
#include "cron/cron_schedule.h"

namespace baton::internal {

// The fire times to enqueue now, ascending.
//  - `handled_until`: every tick <= this instant was already fired or deliberately skipped (the
//    scheduler keeps it per job, ideally in Redis so that all schedulers share it).
//  - `now`: the current time; ticks after it are not due yet.
//  - `grace`: how late a tick may be seen and still be on time (a few poll intervals).
// Ticks in (max(handled_until, now - grace), now] are on time: all are returned.
// Ticks in (handled_until, now - grace] were missed (no scheduler ran): kSkip drops them;
// kRunOnce returns the first of them only, one task standing in for all (its id, from
// TickTaskId, is the same for every scheduler that shares `handled_until`).
// After enqueueing, the caller sets handled_until = now. Nothing is due when now <= handled_until.
// Cost: one CronSchedule::Next per returned tick, plus one.
std::vector<std::chrono::sys_seconds> DueTicks(const CronSchedule& schedule,
                                               MissedTickPolicy policy,
                                               std::chrono::sys_seconds handled_until,
                                               std::chrono::sys_seconds now,
                                               std::chrono::seconds grace);

}  // namespace baton::internal
