// The C++ worker of the chaos run (tests/chaos/README.md). Serves one (namespace, type). Its
// handler does what the task's payload asks ({"kind": ok|slow|fail|dead|fatal, "sleep_ms": N,
// "fail_times": K}) and records every execution in a ledger on a second Redis that the chaos never
// kills: `S <id> <attempt> <pid> <label> - <ms>` before the work, `E <id> <attempt> <pid> <label>
// <outcome> <ms>` after it. An S without its E is an execution that was cut short (its worker was
// killed). <ms> is the ledger Redis' clock (appended by kLedgerScript), not this process' own:
// one worker runs with a skewed clock, and the accounting compares these times with the chaos'.
//   chaos_worker <queue url> <ledger url> <ns> <type> <concurrency> <lease ms> <label>
#include <unistd.h>

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

// RPUSH chaos:ledger "<line> <ledger server ms>".
constexpr const char* kLedgerScript =
    "local t = redis.call('TIME') "
    "return redis.call('RPUSH', KEYS[1], ARGV[1] .. ' ' .. "
    "string.format('%d', t[1] * 1000 + math.floor(t[2] / 1000)))";

// One ledger connection per handler thread (a RedisConnection is not thread-safe).
baton::Status Record(const RedisEndpoint& ledger, const std::string& line) {
  thread_local std::unique_ptr<RedisConnection> conn;
  if (!conn || conn->broken()) {
    auto opened = RedisConnection::Open(ledger);
    if (!opened.ok()) return opened.status();
    conn = std::move(*opened);
  }
  auto reply = conn->Command({"EVAL", kLedgerScript, "1", "chaos:ledger", line});
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return baton::Status::Internal("ledger: " + reply->str);
  return baton::Status::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(
        stderr, "usage: %s <queue url> <ledger url> <ns> <type> <concurrency> <lease ms> <label>\n",
        argv[0]);
    return 2;
  }
  const std::string url = argv[1];
  auto ledger = RedisEndpoint::Parse(argv[2]);
  const std::string ns = argv[3];
  const std::string type = argv[4];
  const int concurrency = std::atoi(argv[5]);
  const int lease_ms = std::atoi(argv[6]);
  const std::string label = argv[7];
  if (!ledger.ok()) {
    std::fprintf(stderr, "%s\n", ledger.status().ToString().c_str());
    return 2;
  }
  const std::string pid = std::to_string(getpid());

  baton::WorkerOptions options;
  options.redis.url = url;
  options.redis.timeout = std::chrono::milliseconds(2000);
  options.logger = baton::NewStderrLogger();
  options.service = "chaos-" + label;
  options.block = std::chrono::milliseconds(500);
  options.maintenance = false;  // batond does the promoting and reaping: it is under test
  options.shutdown_grace = std::chrono::milliseconds(2000);
  options.handle_signals = true;
  baton::Worker worker(options);
  baton::TypeOptions type_options;
  type_options.concurrency = concurrency;
  type_options.retry.base = std::chrono::milliseconds(100);
  type_options.retry.max = std::chrono::milliseconds(1000);
  type_options.lease_ms = lease_ms;
  baton::Status registered = worker.Register(
      ns, type,
      [&](baton::TaskContext& ctx) -> baton::Status {
        const std::string& id = ctx.task().task_id;
        const std::string head = id + " " + std::to_string(ctx.attempt()) + " " + pid + " " + label;
        if (baton::Status s = Record(*ledger, "S " + head + " -"); !s.ok()) {
          return s;
        }
        const auto payload = ctx.task().Payload();
        const std::string kind = payload.value("kind", "ok");
        const int sleep_ms = payload.value("sleep_ms", 0);
        const int fail_times = payload.value("fail_times", 0);
        if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
        std::string outcome = "ok";
        if (kind == "dead" || (kind == "fail" && ctx.attempt() <= fail_times)) outcome = "error";
        if (kind == "fatal") outcome = "fatal";
        if (baton::Status s = Record(*ledger, "E " + head + " " + outcome); !s.ok()) {
          return s;
        }
        if (outcome == "fatal") throw baton::NonRetryableError("chaos: fatal task");
        if (outcome == "error") return baton::Status::Internal("chaos: planned failure");
        return baton::Status::Ok();
      },
      type_options);
  if (!registered.ok()) {
    std::fprintf(stderr, "%s\n", registered.ToString().c_str());
    return 2;
  }
  std::fprintf(stderr, "chaos_worker %s started\n", worker.consumer_name().c_str());
  baton::Status run = worker.Run();
  if (!run.ok()) {
    std::fprintf(stderr, "%s\n", run.ToString().c_str());
    return 1;
  }
  return 0;
}
