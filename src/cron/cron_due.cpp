#include "cron/cron_due.h"

#include <algorithm>

namespace baton::internal {

std::vector<std::chrono::sys_seconds> DueTicks(const CronSchedule& schedule,
                                               MissedTickPolicy policy,
                                               std::chrono::sys_seconds handled_until,
                                               std::chrono::sys_seconds now,
                                               std::chrono::seconds grace) {
  std::vector<std::chrono::sys_seconds> due;
  if (now <= handled_until) return due;
  const std::chrono::sys_seconds on_time_after = std::max(handled_until, now - grace);
  if (on_time_after > handled_until && policy == MissedTickPolicy::kRunOnce) {
    // Only the first missed tick is needed, not all of them (a per-second job down for a month).
    const std::chrono::sys_seconds first_missed = schedule.Next(handled_until);
    if (first_missed <= on_time_after) due.push_back(first_missed);
  }
  for (auto tick = schedule.Next(on_time_after); tick <= now; tick = schedule.Next(tick)) {
    due.push_back(tick);
  }
  return due;
}

}  // namespace baton::internal
