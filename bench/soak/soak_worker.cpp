// A worker for the soak run (bench/soak/run.sh): serves one (namespace, type) with a handler that
// does what the task's payload asks and nothing else, so that the run measures Baton, not the
// handler. Payload fields (all optional): "fail": the number of first attempts that fail (a
// retried task), "work_ms": how long each attempt sleeps. Writes nothing to Redis itself: the
// soak driver follows the tasks through the namespace's events stream. Stops gracefully on
// SIGTERM/SIGINT and prints its counters.
//   soak_worker <redis url> <ns> <type> <concurrency> <lease ms> <retry base ms>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "baton/worker.h"

namespace {

// The payload's integer field `name`, or 0 when it is absent or not an integer.
int PayloadInt(const nlohmann::json& payload, const char* name) {
  auto it = payload.find(name);
  return it != payload.end() && it->is_number_integer() ? it->get<int>() : 0;
}

baton::Status RunSoakTask(const baton::TaskContext& ctx) {
  const nlohmann::json payload = ctx.task().Payload();
  const int work_ms = PayloadInt(payload, "work_ms");
  if (work_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(work_ms));
  if (ctx.attempt() <= PayloadInt(payload, "fail")) {
    return baton::Status::Internal("soak: attempt " + std::to_string(ctx.attempt()) +
                                   " fails on purpose");
  }
  return baton::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr,
                 "usage: %s <redis url> <ns> <type> <concurrency> <lease ms> <retry base ms>\n",
                 argv[0]);
    return 2;
  }
  baton::WorkerOptions options;
  options.redis.url = argv[1];
  options.logger = baton::NewStderrLogger();
  options.service = "soak";
  options.block = std::chrono::milliseconds(1000);
  options.shutdown_grace = std::chrono::milliseconds(5000);
  options.handle_signals = true;  // batond promotes and reclaims: no maintenance here
  baton::Worker worker(options);
  baton::TypeOptions type_options;
  type_options.concurrency = std::atoi(argv[4]);
  type_options.lease_ms = std::atoi(argv[5]);
  type_options.retry.base = std::chrono::milliseconds(std::atoi(argv[6]));
  type_options.retry.max = 10 * type_options.retry.base;
  baton::Status registered = worker.Register(argv[2], argv[3], RunSoakTask, type_options);
  if (!registered.ok()) {
    std::fprintf(stderr, "%s\n", registered.ToString().c_str());
    return 2;
  }
  std::fprintf(stderr, "soak_worker %s started\n", worker.consumer_name().c_str());
  baton::Status run = worker.Run();
  if (!run.ok()) {
    std::fprintf(stderr, "%s\n", run.ToString().c_str());
    return 1;
  }
  baton::WorkerStats s = worker.stats();
  std::fprintf(stderr, "soak_worker stopped: succeeded=%llu failed=%llu dead=%llu\n",
               static_cast<unsigned long long>(s.succeeded),
               static_cast<unsigned long long>(s.failed), static_cast<unsigned long long>(s.dead));
  return 0;
}
