// baton work --exec CMD: a generic worker. Any executable becomes a Baton handler: each task runs
// `/bin/sh -c CMD` with the payload JSON on stdin and the task in the environment. Exit status 0 is
// success; the --non-retryable-exit status (default 65, EX_DATAERR: "the input was wrong", so a
// retry cannot help) sends the task straight to the dead-letter queue; any other status, or death
// by a signal, is a failed attempt (retried per the task's max_retry) whose error is the last 4 KB
// of the command's stderr.
#include <signal.h>

#include <iostream>

#include "baton/worker.h"
#include "commands.h"
#include "exec_runner.h"
#include "option_rules.h"

namespace baton::cli {

namespace {

// Environment values are limited (MAX_ARG_STRLEN, 128 KiB each): above this the task document in
// BATON_TASK carries no payload (it is on stdin anyway) and BATON_TASK_TRUNCATED=1 says so.
constexpr std::size_t kMaxTaskEnvBytes = 65536;

struct WorkArgs {
  std::string ns;
  std::string type;
  std::string exec;
  int concurrency = 1;
  std::string group = "baton";
  int timeout = 0;
  int kill_grace = 5;
  int non_retryable_exit = 65;
  std::int64_t lease_ms = 0;  // 0: the namespace's lease_ms setting
  std::int64_t retry_base_ms = RetryPolicy{}.base.count();
  std::int64_t retry_max_ms = RetryPolicy{}.max.count();
  bool maintenance = false;  // in-process promote + reclaim (batond's job by default)
  std::string service = "baton-work";
};

Status RunTask(const WorkArgs& args, TaskContext& context) {
  const Task& task = context.task();
  ExecRequest request;
  request.command = args.exec;
  request.stdin_data = task.payload_json;
  std::string document = task.ToJson();
  bool truncated = document.size() > kMaxTaskEnvBytes;
  if (truncated) {
    nlohmann::json object = task.ToJsonObject();
    object["payload"] = nullptr;
    document = object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  request.env = {"BATON_TASK_ID=" + task.task_id,
                 "BATON_NAMESPACE=" + task.ns,
                 "BATON_TASK_TYPE=" + task.task_type,
                 "BATON_ATTEMPT=" + std::to_string(context.attempt()),
                 "BATON_STREAM_ID=" + context.stream_id(),
                 "BATON_TASK=" + document,
                 std::string("BATON_TASK_TRUNCATED=") + (truncated ? "1" : "0")};
  request.deadline = context.deadline();
  if (args.timeout > 0) {
    request.deadline = std::min(
        request.deadline, std::chrono::steady_clock::now() + std::chrono::seconds(args.timeout));
  }
  request.cancelled = [&context] { return context.cancelled(); };
  request.kill_grace = std::chrono::seconds(args.kill_grace);

  ExecResult r = RunCommand(request);
  if (!r.started) return Status::Internal("cannot run the command: " + r.error);
  std::string tail = r.stderr_tail;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  std::string detail = tail.empty() ? "" : ": " + tail;
  if (r.timed_out) {
    return Status(StatusCode::kDeadlineExceeded,
                  "command timed out after " + std::to_string(r.elapsed.count() / 1000) +
                      " s and was stopped with " + (r.killed ? "SIGKILL" : "SIGTERM") + detail);
  }
  if (r.cancelled) {
    return Status(StatusCode::kCancelled,
                  "command stopped (worker shutdown or lease lost)" + detail);
  }
  if (r.signal != 0) {
    return Status::Internal("command killed by signal " + std::to_string(r.signal) + detail);
  }
  if (r.exit_code == 0) return Status::Ok();
  if (r.exit_code == args.non_retryable_exit) {
    return NonRetryable("exit status " + std::to_string(r.exit_code) + " (non-retryable)" + detail);
  }
  return Status::Internal("exit status " + std::to_string(r.exit_code) + detail);
}

int RunWork(Context& ctx, const WorkArgs& args) {
  ::signal(SIGPIPE, SIG_IGN);
  WorkerOptions options;
  options.redis = ctx.global.redis;
  options.group = args.group;
  options.service = args.service;
  options.default_concurrency = args.concurrency;
  options.maintenance = args.maintenance;
  options.handle_signals = true;
  options.logger =
      NewStderrLogger();  // reconnects, failed heartbeats: on stderr with its own lines
  options.shutdown_grace = std::chrono::seconds(args.kill_grace + 5);
  Worker worker(options);
  TypeOptions type_options;
  type_options.lease_ms = args.lease_ms;
  type_options.retry.base = std::chrono::milliseconds(args.retry_base_ms);
  type_options.retry.max = std::chrono::milliseconds(args.retry_max_ms);
  Status s = worker.Register(
      args.ns, args.type, [&args](TaskContext& context) { return RunTask(args, context); },
      type_options);
  if (!s.ok()) return ctx.Fail("work", s);
  std::cerr << "baton work: running '" << args.exec << "' for (" << args.ns << ", " << args.type
            << ") in group " << args.group << ", concurrency " << args.concurrency
            << "; SIGTERM or Ctrl-C stops\n";
  s = worker.Run();
  if (!s.ok()) return ctx.Fail("work", s);
  WorkerStats stats = worker.stats();
  if (ctx.global.json) {
    std::cout << nlohmann::json{{"succeeded", stats.succeeded},
                                {"failed", stats.failed},
                                {"dead", stats.dead},
                                {"malformed", stats.malformed}}
                     .dump(2)
              << "\n";
  } else {
    std::cerr << "baton work: stopped; " << stats.succeeded << " succeeded, " << stats.failed
              << " failed (" << stats.dead << " dead)\n";
  }
  return kExitOk;
}

}  // namespace

void AddWorkCommand(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<WorkArgs>();
  CLI::App* cmd = app.add_subcommand("work", "Run a shell command for every task of one type");
  cmd->add_option("--ns", args->ns, "Namespace")->required();
  cmd->add_option("--type", args->type, "Task type")->required();
  cmd->add_option("--exec", args->exec, "Command, run with /bin/sh -c; payload on stdin")
      ->required();
  cmd->add_option("--concurrency", args->concurrency, "Commands running at once")
      ->check(IntegerIn(1, 1024));
  cmd->add_option("--group", args->group, "Consumer group (a rescue group: <G>.rescue)");
  cmd->add_option("--timeout", args->timeout,
                  "Stop a command after this many seconds when its task sets no "
                  "execution_timeout (0: no limit)")
      ->check(IntegerIn(0, 86400));
  cmd->add_option("--kill-grace", args->kill_grace, "Seconds between SIGTERM and SIGKILL")
      ->check(IntegerIn(0, 3600));
  cmd->add_option("--non-retryable-exit", args->non_retryable_exit,
                  "Exit status that sends the task to the dead-letter queue without retries "
                  "(-1: none)");
  cmd->add_option("--lease-ms", args->lease_ms,
                  "Lease of a running task, 1000..86400000 ms (heartbeats extend it); 0: the "
                  "namespace's lease_ms setting (baton config)")
      ->check(ZeroOrIntegerIn(1000, 86400000));
  cmd->add_option("--retry-base-ms", args->retry_base_ms,
                  "Backoff after the first failed attempt, ms; doubles per attempt up to "
                  "--retry-max-ms, plus up to 25% jitter")
      ->check(IntegerIn(1, 86400000));
  cmd->add_option("--retry-max-ms", args->retry_max_ms, "Longest backoff between attempts, ms")
      ->check(IntegerIn(1, 86400000));
  cmd->add_flag("--maintenance", args->maintenance,
                "Also promote due tasks and reclaim expired leases here, for setups without "
                "batond (off by default: batond does it)");
  cmd->add_option("--service", args->service, "Service name in consumer names");
  cmd->callback([&ctx, args] { ctx.exit_code = RunWork(ctx, *args); });
}

}  // namespace baton::cli
