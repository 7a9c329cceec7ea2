#pragma once
// Cron jobs from C++: define, read, list, enable/disable and remove the jobs that batond fires
// (the Redis hash baton:cron, docs/cron.md), and preview a schedule's fire times. The same
// definitions, rules and error messages as `baton cron`, which is built on this API.
#include <chrono>
#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "baton/redis_options.h"
#include "baton/status.h"
#include "baton/task.h"

namespace baton {

// What batond does with ticks that came due while no scheduler was running (docs/cron.md
// "Missed ticks").
enum class MissedTicks {
  kSkip,     // "skip": missed ticks are dropped; the job resumes at its next tick
  kRunOnce,  // "run_once": one task stands in for all the missed ticks
};

// One cron job: at each fire time of `schedule` in `timezone`, batond enqueues one task of
// `task_type` in namespace `ns` with `payload`, `max_retry` and `execution_timeout`, whose id is
// "cron:<name>:<fire time in Unix seconds>" (so several batond enqueue it once). Stored as the
// field `name` of the hash baton:cron, the other members as the JSON object of docs/cron.md.
struct CronJobSpec {
  std::string name;              // ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$
  std::string schedule;          // a cron line: "0 9 * * MON-FRI", "*/10 * * * * *", "@daily"
  std::string timezone = "UTC";  // an IANA zone name the schedule is read in: "Europe/Berlin"
  std::string ns;                // namespace of the tasks; the name pattern above
  std::string task_type;         // the name pattern above
  nlohmann::json payload = nlohmann::json::object();  // a JSON object, <= kMaxPayloadBytes
  int max_retry = kDefaultMaxRetry;                   // 0..kMaxRetryLimit
  bool enabled = true;  // a disabled job keeps its definition but does not fire
  MissedTicks missed = MissedTicks::kSkip;
  std::optional<int> execution_timeout;  // seconds, 1..kMaxExecutionTimeout; none by default

  // Checks every field, in the order above, without touching Redis: the schedule parses, the zone
  // is known to the system tzdata, names match their pattern, numbers are in range. Fails with
  // kInvalidArgument naming the first offending field and its rule, e.g.
  // "schedule: minute: 61 is out of range 0..59" or "timezone: unknown IANA time zone
  // \"Mars/Base\"". Thread-safe (the first call loads the zone database from disk).
  Status Validate() const;

  friend bool operator==(const CronJobSpec&, const CronJobSpec&) = default;
};

// A stored definition that no longer parses or validates (edited by hand, or written by another
// version). batond skips such a job; Put() a valid definition or Remove() it.
struct UnreadableCronJob {
  std::string name;
  std::string definition;  // the stored text, as it is
  std::string error;       // why it is refused: "field: rule", as CronJobSpec::Validate() words it
};

// Every stored job, split by whether its definition can be read.
struct CronJobList {
  std::vector<CronJobSpec> jobs;              // sorted by name
  std::vector<UnreadableCronJob> unreadable;  // sorted by name
};

struct CronClientOptions {
  RedisOptions redis;
};

// Reads and writes baton:cron. Every write is followed by PUBLISH baton:cron:changed <name>, so a
// running batond reloads the job at once (it also rereads the hash on its own, about every second,
// so a lost message only delays the change). No functions library is needed: definitions are plain
// hash fields.
//
// Thread-safety: a CronClient is NOT thread-safe (it owns one connection); make one per thread.
// Errors carry the operation as a prefix: "cron put: schedule: minute: 61 is out of range 0..59".
// Every call may fail with kUnavailable when Redis cannot be reached (the connection broke); the
// next call reconnects.
class CronClient {
 public:
  // Connects to options.redis.url. Fails with kInvalidArgument (bad URL, "cron connect:
  // redis_url: ...") or kUnavailable (cannot connect or authenticate).
  static StatusOr<std::unique_ptr<CronClient>> Connect(const CronClientOptions& options);
  ~CronClient();

  // Validates `job` (CronJobSpec::Validate(); kInvalidArgument, nothing written), then stores it,
  // replacing any job of that name.
  Status Put(const CronJobSpec& job);
  // Like Put(), but only creates: kAlreadyExists when a job of that name is stored (readable or
  // not); nothing is written then.
  Status Add(const CronJobSpec& job);

  // The job `name`; nullopt when there is none. A stored definition that does not validate fails
  // with kInvalidArgument "cron get: stored definition of NAME is invalid: field: rule".
  StatusOr<std::optional<CronJobSpec>> Get(const std::string& name);

  // Every stored job, sorted by name. A definition that does not validate does not fail the call:
  // it is reported in CronJobList::unreadable (with the reason) instead of CronJobList::jobs.
  StatusOr<CronJobList> List();

  // Removes the job. kNotFound when there is no such job.
  Status Remove(const std::string& name);

  // Lets the job fire again (true) or stops it (false), keeping its definition. kNotFound when
  // there is no such job; kInvalidArgument (as Get()) when its stored definition does not
  // validate. Nothing is written when the job already is in that state. The read and the write
  // are one compare-and-set (WATCH/MULTI), so a concurrent Put() of the same job is never undone;
  // kConflict if the definition kept changing underneath for several attempts.
  Status SetEnabled(const std::string& name, bool enabled);

 private:
  struct Impl;
  explicit CronClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The next `n` fire times of the cron line `schedule` in the zone `timezone`, strictly after
// `after`, ascending: what batond would fire, across daylight saving changes by the rules of
// docs/cron.md (a fixed-hour tick in a spring-forward gap fires once, at the end of the gap; one in
// a fall-back overlap fires at its first occurrence). Fewer than `n` only when the schedule ends
// before 9999-12-31. Fails with kInvalidArgument "schedule: ..." or "timezone: ...". Does not
// touch Redis; thread-safe.
//
// The system tzdata lists DST changes only up to 2037; later fire times use the zone's last
// offset, so in a zone with DST they may be an hour off in summer.
StatusOr<std::vector<std::chrono::sys_seconds>> NextFireTimes(std::string_view schedule,
                                                              std::string_view timezone,
                                                              std::chrono::sys_seconds after,
                                                              std::size_t n);
// The same for job.schedule in job.timezone; the other fields are neither used nor checked (a
// disabled job's times are listed too: they are when it would fire once enabled).
StatusOr<std::vector<std::chrono::sys_seconds>> NextFireTimes(const CronJobSpec& job,
                                                              std::chrono::sys_seconds after,
                                                              std::size_t n);

}  // namespace baton
