// Cron jobs from C++ (docs/cron.md "From C++" shows this file; CI builds it and runs it in
// tests/integration/cron_example_e2etest.cpp). Stores the job "nightly-report" (namespace shop,
// type report, 02:30 Berlin time) in baton:cron, where batond fires it, and prints its next runs.
//   baton_example_cron [REDIS_URL]
#include <baton/cron.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--help") {
    std::puts(
        "usage: baton_example_cron [REDIS_URL]\n"
        "Stores the cron job nightly-report (namespace shop, type report, 02:30 Europe/Berlin)\n"
        "and prints its next three runs.");
    return 0;
  }
  // snippet-begin
  baton::CronClientOptions options;
  if (argc > 1) options.redis.url = argv[1];  // default redis://127.0.0.1:6379
  auto cron = baton::CronClient::Connect(options);
  if (!cron.ok()) return std::fprintf(stderr, "%s\n", cron.status().ToString().c_str()), 1;

  baton::CronJobSpec job;
  job.name = "nightly-report";
  job.schedule = "30 2 * * *";     // 02:30 every day,
  job.timezone = "Europe/Berlin";  // Berlin time, summer and winter
  job.ns = "shop";
  job.task_type = "report";
  job.payload = {{"kind", "daily"}};
  job.missed = baton::MissedTicks::kRunOnce;  // after a downtime, one run for all it missed
  baton::Status put = (*cron)->Put(job);      // validated first; batond reloads at once
  if (!put.ok()) return std::fprintf(stderr, "%s\n", put.ToString().c_str()), 1;

  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  auto next = baton::NextFireTimes(job, now, 3);  // no Redis needed
  if (!next.ok()) return std::fprintf(stderr, "%s\n", next.status().ToString().c_str()), 1;
  for (std::chrono::sys_seconds at : *next) {
    const std::time_t unix_time = at.time_since_epoch().count();
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", std::gmtime(&unix_time));
    std::printf("%s runs at %s\n", job.name.c_str(), text);
  }
  // snippet-end
  return 0;
}
