// Example worker: handlers for the demo's task types. Runs until SIGTERM/SIGINT. batond (which
// the demo starts) promotes retries and delayed tasks and takes back the tasks of dead workers;
// without a batond, set options.maintenance = true to do it in this process.
//   baton_example_worker redis://127.0.0.1:6379
#include <baton/worker.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <stdexcept>
#include <string>

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--help") {
    std::puts(
        "usage: baton_example_worker [REDIS_URL]\n"
        "Runs the demo's task types of namespace order (send_notification, cancel_unpaid, "
        "flaky_inventory, charge_card) until SIGTERM or SIGINT.");
    return 0;
  }
  baton::WorkerOptions options;
  if (argc > 1) options.redis.url = argv[1];
  options.logger = baton::NewStderrLogger();
  options.service = "demo-cpp";
  options.handle_signals = true;
  baton::Worker worker(options);

  auto log = [](const baton::TaskContext& ctx, const char* what) {
    std::printf("[c++ worker] %-18s %s attempt %d: %s\n", ctx.task().task_type.c_str(),
                ctx.task().task_id.c_str(), ctx.attempt(), what);
    std::fflush(stdout);
  };
  // Short retry delays so the demo finishes in seconds (the default base is 2 s, max 10 min).
  baton::TypeOptions quick_retry;
  quick_retry.concurrency = 2;
  quick_retry.retry.base = std::chrono::milliseconds(500);
  quick_retry.retry.max = std::chrono::seconds(2);

  // Register fails only for a bad name or option: a bug in this program, so stop at once.
  auto must = [](const baton::Status& registered) {
    if (registered.ok()) return;
    std::fprintf(stderr, "worker: %s\n", registered.ToString().c_str());
    std::exit(1);
  };
  must(worker.Register("order", "send_notification", [&](baton::TaskContext& ctx) {
    log(ctx, ("notify " + ctx.task().payload_json).c_str());
    return baton::Status::Ok();
  }));
  must(worker.Register("order", "cancel_unpaid", [&](baton::TaskContext& ctx) {
    long long waited = std::time(nullptr) - ctx.task().created_at;
    log(ctx, ("cancelled unpaid order after " + std::to_string(waited) + " s").c_str());
    return baton::Status::Ok();
  }));
  must(worker.Register(
      "order", "flaky_inventory",
      [&](baton::TaskContext& ctx) {
        if (ctx.attempt() == 1) {
          log(ctx, "inventory service timed out, will retry");
          return baton::Status(baton::StatusCode::kUnavailable, "inventory service timed out");
        }
        log(ctx, "reserved stock on retry");
        return baton::Status::Ok();
      },
      quick_retry));
  must(worker.Register(
      "order", "charge_card",
      [&](baton::TaskContext& ctx) -> baton::Status {
        log(ctx, "card declined");
        throw std::runtime_error("card declined by issuer");
      },
      quick_retry));

  auto status = worker.Run();
  if (!status.ok()) {
    std::fprintf(stderr, "worker: %s\n", status.ToString().c_str());
    return 1;
  }
  auto stats = worker.stats();
  std::printf("[c++ worker] stopped: %llu succeeded, %llu failed attempts, %llu dead\n",
              static_cast<unsigned long long>(stats.succeeded),
              static_cast<unsigned long long>(stats.failed),
              static_cast<unsigned long long>(stats.dead));
  return 0;
}
