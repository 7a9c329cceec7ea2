// A worker process for the end-to-end tests. Serves one (namespace, type); its handler records
// every run with HINCRBY baton-test:runs <task_id> 1 (so a test can tell tasks that ran twice from
// tasks that never ran), optionally sleeps, then succeeds. Stops gracefully on SIGTERM/SIGINT.
// No batond runs in these tests: the worker's own maintenance promotes retries and reclaims the
// leases of dead workers.
//   counting_worker <redis url> <ns> <type> <concurrency> <lease ms> [handler sleep ms]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "baton/worker.h"
#include "broker/redis_connection.h"

namespace {

using baton::internal::RedisConnection;
using baton::internal::RedisEndpoint;

// One connection per handler thread (a RedisConnection is not thread-safe).
baton::Status CountRun(const RedisEndpoint& endpoint, const std::string& task_id) {
  thread_local std::unique_ptr<RedisConnection> conn;
  if (!conn || conn->broken()) {
    auto opened = RedisConnection::Open(endpoint);
    if (!opened.ok()) return opened.status();
    conn = std::move(*opened);
  }
  auto reply = conn->Command({"HINCRBY", "baton-test:runs", task_id, "1"});
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return baton::Status::Internal("HINCRBY: " + reply->str);
  return baton::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s <redis url> <ns> <type> <concurrency> <lease ms> [sleep ms]\n",
                 argv[0]);
    return 2;
  }
  const std::string url = argv[1];
  const std::string ns = argv[2];
  const std::string type = argv[3];
  const int concurrency = std::atoi(argv[4]);
  const int lease_ms = std::atoi(argv[5]);
  const int sleep_ms = argc > 6 ? std::atoi(argv[6]) : 0;
  auto endpoint = RedisEndpoint::Parse(url);
  if (!endpoint.ok()) {
    std::fprintf(stderr, "%s\n", endpoint.status().ToString().c_str());
    return 2;
  }

  baton::WorkerOptions options;
  options.redis.url = url;
  options.logger = baton::NewStderrLogger();
  options.service = "counting";
  options.block = std::chrono::milliseconds(500);
  options.maintenance = true;
  options.shutdown_grace = std::chrono::milliseconds(2000);
  options.handle_signals = true;
  baton::Worker worker(options);
  baton::TypeOptions type_options;
  type_options.concurrency = concurrency;
  type_options.retry.base = std::chrono::milliseconds(50);
  type_options.retry.max = std::chrono::milliseconds(500);
  type_options.lease_ms = lease_ms;
  baton::Status registered = worker.Register(
      ns, type,
      [&](baton::TaskContext& ctx) {
        baton::Status counted = CountRun(*endpoint, ctx.task().task_id);
        if (!counted.ok()) return counted;
        if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
        return baton::Status::Ok();
      },
      type_options);
  if (!registered.ok()) {
    std::fprintf(stderr, "%s\n", registered.ToString().c_str());
    return 2;
  }
  std::fprintf(stderr, "counting_worker %s started\n", worker.consumer_name().c_str());
  baton::Status run = worker.Run();
  if (!run.ok()) {
    std::fprintf(stderr, "%s\n", run.ToString().c_str());
    return 1;
  }
  baton::WorkerStats s = worker.stats();
  std::fprintf(stderr, "counting_worker stopped: succeeded=%llu failed=%llu\n",
               static_cast<unsigned long long>(s.succeeded),
               static_cast<unsigned long long>(s.failed));
  return 0;
}
