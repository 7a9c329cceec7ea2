// baton enqueue: one task, from options or from a whole task document (--file). The payload text
// (--payload, or --payload-file for one too big for a command-line argument) is enqueued byte for
// byte as given.
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "baton/task.h"
#include "commands.h"
#include "option_rules.h"
#include "output.h"

namespace baton::cli {

namespace {

struct EnqueueArgs {
  std::string ns;
  std::string type;
  std::string payload = "{}";
  std::int64_t delay = 0;
  std::int64_t at = 0;
  int max_retry = kDefaultMaxRetry;
  int timeout = 0;
  std::string id;
  std::string unique_key;
  std::int64_t unique_ttl = 0;
  std::string extra;
  std::string file;
  std::string payload_file;
};

std::string_view OutcomeName(EnqueueOutcome outcome) {
  switch (outcome) {
    case EnqueueOutcome::kQueued:
      return "queued";
    case EnqueueOutcome::kScheduled:
      return "scheduled";
    case EnqueueOutcome::kDuplicate:
      return "duplicate";
    case EnqueueOutcome::kUniqueConflict:
      return "unique_conflict";
  }
  return "unknown";
}

// The bytes of `path` ("-": standard input); `field` names the option in the error.
StatusOr<std::string> ReadFile(const std::string& field, const std::string& path) {
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(field, "cannot read \"" + path + "\"");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The task the options describe (id and created_at filled in), payload text kept as given.
StatusOr<Task> TaskFromOptions(const EnqueueArgs& args) {
  std::string payload_text = args.payload;
  if (!args.payload_file.empty()) {
    auto text = ReadFile("payload_file", args.payload_file);
    if (!text.ok()) return text.status();
    payload_text = std::move(*text);
  }
  auto payload = nlohmann::json::parse(payload_text, nullptr, /*allow_exceptions=*/false);
  if (payload.is_discarded() || !payload.is_object()) {
    return Status::InvalidArgument("payload", "must be a JSON object, e.g. '{\"to\":\"a@b.c\"}'");
  }
  TaskRequest request;
  request.ns = args.ns;
  request.task_type = args.type;
  request.payload_json = std::move(payload_text);
  request.options.max_retry = args.max_retry;
  request.options.delay_seconds = args.delay;
  if (!args.id.empty()) request.options.task_id = args.id;
  if (args.timeout > 0) request.options.execution_timeout = args.timeout;
  if (!args.extra.empty()) {
    auto extra = nlohmann::json::parse(args.extra, nullptr, /*allow_exceptions=*/false);
    if (extra.is_discarded() || !extra.is_object()) {
      return Status::InvalidArgument("extra", "must be a JSON object, e.g. '{\"headers\":{}}'");
    }
    request.options.extra = extra;
  }
  return Client::BuildTask(request);
}

int RunEnqueue(Context& ctx, const EnqueueArgs& args) {
  StatusOr<Task> task = Status::Internal("no task");
  if (!args.file.empty()) {
    auto text = ReadFile("file", args.file);
    if (!text.ok()) return ctx.Fail("enqueue", text.status());
    task = Task::FromJson(*text);
  } else {
    if (args.ns.empty() || args.type.empty()) {
      return ctx.Usage("enqueue", "--ns and --type are required (or --file with a task document)");
    }
    task = TaskFromOptions(args);
  }
  if (!task.ok()) return ctx.Fail("enqueue", task.status());

  EnqueueOptions scheduling;
  if (args.at > 0) {
    scheduling.run_at = std::chrono::system_clock::time_point(std::chrono::seconds(args.at));
  }
  scheduling.unique_key = args.unique_key;
  scheduling.unique_ttl = std::chrono::seconds(args.unique_ttl);

  auto client = ctx.OpenClient();
  if (!client.ok()) return ctx.Fail("enqueue", client.status());
  auto result = (*client)->EnqueueTask(*task, scheduling);
  if (!result.ok()) return ctx.Fail("enqueue", result.status());

  const EnqueueResult& r = *result;
  if (ctx.global.json) {
    PrintJson(
        {{"task_id", r.task_id},
         {"namespace", task->ns},
         {"type", task->task_type},
         {"outcome", OutcomeName(r.outcome)},
         {"stream_id", r.stream_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.stream_id)},
         {"due_ms", r.outcome == EnqueueOutcome::kScheduled ? nlohmann::json(r.due_ms)
                                                            : nlohmann::json(nullptr)},
         {"detail", r.detail}});
  } else {
    switch (r.outcome) {
      case EnqueueOutcome::kQueued:
        std::cout << "queued " << r.task_id << " (stream entry " << r.stream_id << ")\n";
        break;
      case EnqueueOutcome::kScheduled:
        std::cout << "scheduled " << r.task_id << ": due at " << WhenText(r.due_ms, LocalNowMs())
                  << "\n";
        break;
      case EnqueueOutcome::kDuplicate:
        std::cout << "duplicate " << r.task_id << ": a task with this id is already " << r.detail
                  << " (nothing written)\n";
        break;
      case EnqueueOutcome::kUniqueConflict:
        break;
    }
  }
  if (r.outcome == EnqueueOutcome::kUniqueConflict) {
    // The error line every failure has (docs/cli.md); --json keeps the outcome document above.
    std::cerr << "baton enqueue: " << StatusCodeName(StatusCode::kConflict) << ": unique key \""
              << args.unique_key << "\" is held by task " << r.detail << " (nothing written)\n";
  }
  return r.outcome == EnqueueOutcome::kUniqueConflict ? kExitConflict : kExitOk;
}

}  // namespace

void AddEnqueueCommand(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<EnqueueArgs>();
  CLI::App* cmd = app.add_subcommand("enqueue", "Enqueue one task");
  auto* ns = cmd->add_option("--ns", args->ns, "Namespace");
  auto* type = cmd->add_option("--type", args->type, "Task type");
  auto* payload = cmd->add_option("--payload", args->payload, "Payload, a JSON object");
  auto* payload_file =
      cmd->add_option("--payload-file", args->payload_file,
                      "Payload from a file ('-' reads stdin), byte for byte: for a payload too big "
                      "for one command-line argument (128 KiB on Linux)");
  payload_file->excludes(payload);
  auto* delay = cmd->add_option("--delay", args->delay, "Seconds to wait before the first run")
                    ->check(IntegerIn(0, kMaxDelaySeconds));
  auto* at = cmd->add_option("--at", args->at, "First run at this Unix time (seconds)")
                 ->check(UnixSecondsArg());
  delay->excludes(at);
  auto* max_retry = cmd->add_option("--max-retry", args->max_retry, "Retries after the first run")
                        ->check(IntegerIn(0, kMaxRetryLimit));
  auto* timeout = cmd->add_option("--timeout", args->timeout, "execution_timeout in seconds")
                      ->check(IntegerIn(1, kMaxExecutionTimeout));
  auto* id =
      cmd->add_option("--id", args->id, "Task id (default: a new UUIDv7)")->check(TaskIdArg());
  auto* unique_key = cmd->add_option("--unique-key", args->unique_key,
                                     "Refuse the task while another holds this key");
  auto* unique_ttl =
      cmd->add_option("--unique-ttl", args->unique_ttl, "How long the unique key is held, seconds");
  unique_key->needs(unique_ttl);
  auto* extra = cmd->add_option("--extra", args->extra,
                                "Other top-level task fields, a JSON object (trace, headers)");
  auto* file =
      cmd->add_option("--file", args->file, "A whole task document (JSON; '-' reads stdin)");
  for (CLI::Option* o : {ns, type, payload, payload_file, delay, max_retry, timeout, id, extra}) {
    file->excludes(o);
  }
  cmd->callback([&ctx, args] { ctx.exit_code = RunEnqueue(ctx, *args); });
}

}  // namespace baton::cli
