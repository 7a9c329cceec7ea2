// baton::NextFireTimes: the public preview of a schedule (include/baton/cron.h), on CronSchedule.
#include "baton/cron.h"
#include "cron/cron_job.h"

namespace baton {

StatusOr<std::vector<std::chrono::sys_seconds>> NextFireTimes(std::string_view schedule,
                                                              std::string_view timezone,
                                                              std::chrono::sys_seconds after,
                                                              std::size_t n) {
  auto bound = internal::MakeCronSchedule(schedule, timezone);
  if (!bound.ok()) return bound.status();
  return bound->NextN(after, n);
}

StatusOr<std::vector<std::chrono::sys_seconds>> NextFireTimes(const CronJobSpec& job,
                                                              std::chrono::sys_seconds after,
                                                              std::size_t n) {
  return NextFireTimes(job.schedule, job.timezone, after, n);
}

}  // namespace baton
