// Quick start, worker (docs/getting-started-cpp.md shows this file; CI builds it and runs it in
// tests/integration/quickstart_e2etest.cpp). Namespace "shop", task type "send_email"; runs until
// SIGTERM/SIGINT.
//   baton_quickstart_worker [REDIS_URL]
#include <baton/worker.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--help") {
    std::puts(
        "usage: baton_quickstart_worker [REDIS_URL]\n"
        "Runs tasks of namespace shop, type send_email, until SIGTERM or SIGINT.");
    return 0;
  }
  // snippet-begin
  baton::WorkerOptions options;
  if (argc > 1) options.redis.url = argv[1];
  options.handle_signals = true;              // SIGTERM/SIGINT: finish running tasks, then return
  options.logger = baton::NewStderrLogger();  // lost connections, failed heartbeats, recoveries
  baton::Worker worker(options);
  baton::Status status = worker.Register("shop", "send_email", [](baton::TaskContext& ctx) {
    std::printf("sending %s (attempt %d)\n", ctx.task().payload_json.c_str(), ctx.attempt());
    std::fflush(stdout);
    return baton::Status::Ok();  // an error Status or an exception: retry with backoff
  });
  if (status.ok()) status = worker.Run();
  if (!status.ok()) return std::fprintf(stderr, "%s\n", status.ToString().c_str()), 1;
  // snippet-end
  return 0;
}
