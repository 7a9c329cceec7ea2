// baton dlq list|show|replay|delete|purge: the dead-letter queue. Replay and delete take one task
// id, or a filter (--type, --since, --until), or --all; replay of one task may set a new payload.
#include <iostream>

#include "commands.h"
#include "inspect/utf8_text.h"
#include "option_rules.h"
#include "output.h"
#include "time_arg.h"

namespace baton::cli {

namespace {

struct DlqArgs {
  std::string id;
  std::string ns;
  std::string type;
  std::string since;
  std::string until;
  std::size_t limit = 100;
  bool all = false;
  std::string payload;
  bool has_payload = false;
};

StatusOr<DeadFilter> MakeFilter(const DlqArgs& args, std::size_t limit) {
  DeadFilter filter;
  filter.type = args.type;
  filter.limit = limit;
  std::int64_t now = LocalNowMs();
  if (!args.since.empty()) {
    auto ms = ParseTimeArg("since", args.since, now);
    if (!ms.ok()) return ms.status();
    filter.since_ms = *ms;
  }
  if (!args.until.empty()) {
    auto ms = ParseTimeArg("until", args.until, now);
    if (!ms.ok()) return ms.status();
    filter.until_ms = *ms;
  }
  return filter;
}

bool HasFilter(const DlqArgs& args) {
  return !args.type.empty() || !args.since.empty() || !args.until.empty();
}

int RunList(Context& ctx, const DlqArgs& args) {
  auto filter = MakeFilter(args, args.limit);
  if (!filter.ok()) return ctx.Fail("dlq list", filter.status());
  auto inspector = ctx.OpenInspector();
  if (!inspector.ok()) return ctx.Fail("dlq list", inspector.status());
  auto dead = (*inspector)->ListDead(args.ns, *filter);
  if (!dead.ok()) return ctx.Fail("dlq list", dead.status());
  if (ctx.global.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& d : *dead) out.push_back(d.ToJson());
    PrintJson({{"namespace", args.ns}, {"dead", out}});
    return kExitOk;
  }
  if (dead->empty()) {
    std::cout << "no dead tasks in namespace " << args.ns << " match\n";
    return kExitOk;
  }
  Table table({"TASK", "TYPE", "DIED", "ATTEMPTS", "KIND", "LAST ERROR"});
  std::int64_t now = LocalNowMs();
  for (const auto& d : *dead) {
    std::string error = ShortText(d.last_error, 80);
    for (char& c : error) {
      if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    }
    table.Add(
        {d.id, d.type, WhenText(d.dead_since_ms, now), std::to_string(d.attempts), d.kind, error});
  }
  table.Print(std::cout);
  if (dead->size() == args.limit) {
    std::cout << "(first " << args.limit << " shown: raise --limit to see more)\n";
  }
  return kExitOk;
}

int RunShow(Context& ctx, const DlqArgs& args) {
  auto inspector = ctx.OpenInspector();
  if (!inspector.ok()) return ctx.Fail("dlq show", inspector.status());
  auto task = (*inspector)->GetTask(args.ns, args.id);
  if (!task.ok()) return ctx.Fail("dlq show", task.status());
  if (task->state != TaskState::kDead) {
    return ctx.Fail("dlq show",
                    Status::NotFound("task " + args.id + " is " +
                                     std::string(TaskStateName(task->state)) + ", not dead"),
                    "See it with 'baton task show " + args.id + " --ns " + args.ns + "'.");
  }
  if (ctx.global.json) {
    PrintTaskJson(*task);
    return kExitOk;
  }
  std::cout << "task       " << task->id << "\ntype       " << task->type << "\ndied       "
            << WhenText(task->dead_since_ms.value_or(0), task->now_ms) << "\nattempts   "
            << task->attempts << "\n";
  if (task->body) {
    std::cout << "payload    " << internal::ValidUtf8(task->body->payload) << "\n";
    if (!task->body->raw_fields.empty()) {
      std::cout << "raw fields (the malformed entry as its writer sent it):\n";
      for (const auto& [name, value] : task->body->raw_fields) {
        std::cout << "  " << internal::ValidUtf8(name) << " = " << internal::ValidUtf8(value)
                  << "\n";
      }
    }
  }
  for (const TaskError& e : task->errors) {
    std::cout << "\nattempt " << e.attempt << " (" << e.kind << ", " << TimeText(e.at_ms)
              << (e.worker.empty() ? "" : ", " + e.worker) << "):\n  " << e.error << "\n";
    if (!e.stack.empty()) std::cout << e.stack << "\n";
  }
  return kExitOk;
}

// replay / delete / purge of a filter or --all.
int RunBatch(Context& ctx, const DlqArgs& args, const std::string& command, bool replay) {
  auto filter = MakeFilter(args, 0);
  if (!filter.ok()) return ctx.Fail(command, filter.status());
  auto inspector = ctx.OpenInspector();
  if (!inspector.ok()) return ctx.Fail(command, inspector.status());
  auto result = replay ? (*inspector)->ReplayDeadMatching(args.ns, *filter)
                       : (*inspector)->PurgeDead(args.ns, *filter);
  if (!result.ok()) return ctx.Fail(command, result.status());
  if (ctx.global.json) {
    PrintJson(result->ToJson());
  } else {
    std::cout << (replay ? "replayed " : "deleted ") << result->succeeded << " of "
              << result->matched << " dead tasks\n";
    for (std::size_t i = 0; i < result->failed_ids.size(); ++i) {
      std::cerr << "  " << result->failed_ids[i] << ": " << result->failures[i] << "\n";
    }
  }
  return result->failed_ids.empty() ? kExitOk : kExitError;
}

// Exactly one of: an id, a filter, --all.
int CheckSelection(Context& ctx, const DlqArgs& args, const std::string& command, bool id_allowed) {
  int modes = (args.id.empty() ? 0 : 1) + (HasFilter(args) ? 1 : 0) + (args.all ? 1 : 0);
  if (modes == 1 && (id_allowed || args.id.empty())) return kExitOk;
  return ctx.Usage(command, id_allowed
                                ? "give one task id, or a filter (--type, --since, --until), "
                                  "or --all"
                                : "give a filter (--type, --since, --until) or --all");
}

// What to do when a replay of one task is refused.
std::string ReplayHint(const DlqArgs& args, const Status& status) {
  if (status.code() != StatusCode::kConflict) return "";
  const std::string& message = status.message();
  if (message.find("cannot replay") == std::string::npos) {
    return "Only dead tasks can be replayed: see 'baton task show " + args.id + " --ns " + args.ns +
           "'.";
  }
  std::string see = "See what is stored with 'baton dlq show " + args.id + " --ns " + args.ns + "'";
  if (message.find("payload") != std::string::npos && !args.has_payload) {
    return see + "; replay it with a corrected --payload.";
  }
  return see +
         "; enqueue a corrected task ('baton enqueue') and remove this one with 'baton dlq "
         "delete " +
         args.id + " --ns " + args.ns + "'.";
}

int RunReplay(Context& ctx, const DlqArgs& args) {
  if (int rc = CheckSelection(ctx, args, "dlq replay", true); rc != kExitOk) return rc;
  if (args.id.empty()) {
    if (args.has_payload) return ctx.Usage("dlq replay", "--payload replays one task id only");
    return RunBatch(ctx, args, "dlq replay", true);
  }
  auto inspector = ctx.OpenInspector();
  if (!inspector.ok()) return ctx.Fail("dlq replay", inspector.status());
  std::optional<std::string> payload;
  if (args.has_payload) payload = args.payload;
  auto sid = (*inspector)->ReplayDead(args.ns, args.id, payload);
  if (!sid.ok()) return ctx.Fail("dlq replay", sid.status(), ReplayHint(args, sid.status()));
  if (ctx.global.json) {
    PrintJson({{"task_id", args.id},
               {"namespace", args.ns},
               {"stream_id", *sid},
               {"payload_replaced", args.has_payload}});
  } else {
    std::cout << "replayed " << args.id << ": back in its stream as entry " << *sid
              << (args.has_payload ? " with the new payload" : "") << "\n";
  }
  return kExitOk;
}

int RunDelete(Context& ctx, const DlqArgs& args, const std::string& command) {
  bool purge = command == "dlq purge";
  if (int rc = CheckSelection(ctx, args, command, !purge); rc != kExitOk) return rc;
  if (args.id.empty()) return RunBatch(ctx, args, command, false);
  auto inspector = ctx.OpenInspector();
  if (!inspector.ok()) return ctx.Fail(command, inspector.status());
  if (Status s = (*inspector)->DeleteDead(args.ns, args.id); !s.ok()) return ctx.Fail(command, s);
  if (ctx.global.json) {
    PrintJson({{"task_id", args.id}, {"namespace", args.ns}, {"state", "deleted"}});
  } else {
    std::cout << "deleted " << args.id << "\n";
  }
  return kExitOk;
}

void AddFilterOptions(CLI::App* cmd, DlqArgs& args) {
  cmd->add_option("--type", args.type, "Only this task type");
  cmd->add_option("--since", args.since, "Died at or after (Unix s, 2024-08-01T12:00:00Z, or 2h)");
  cmd->add_option("--until", args.until, "Died at or before (same forms)");
}

}  // namespace

void AddDlqCommand(CLI::App& app, Context& ctx) {
  CLI::App* dlq = app.add_subcommand("dlq", "The dead-letter queue: list, show, replay, delete");
  dlq->require_subcommand(1);

  auto list_args = std::make_shared<DlqArgs>();
  CLI::App* list = dlq->add_subcommand("list", "Dead tasks, oldest death first");
  list->add_option("--ns", list_args->ns, "Namespace")->required();
  AddFilterOptions(list, *list_args);
  list->add_option("--limit", list_args->limit, "At most this many")
      ->check(IntegerIn(1, 1000000000));
  list->callback([&ctx, list_args] { ctx.exit_code = RunList(ctx, *list_args); });

  auto show_args = std::make_shared<DlqArgs>();
  CLI::App* show = dlq->add_subcommand("show", "One dead task with every error and stack");
  show->add_option("id", show_args->id, "Task id")->required();
  show->add_option("--ns", show_args->ns, "Namespace")->required();
  show->callback([&ctx, show_args] { ctx.exit_code = RunShow(ctx, *show_args); });

  auto replay_args = std::make_shared<DlqArgs>();
  CLI::App* replay = dlq->add_subcommand(
      "replay", "Put dead tasks back in their stream with a fresh retry budget");
  replay->add_option("id", replay_args->id, "One task id");
  replay->add_option("--ns", replay_args->ns, "Namespace")->required();
  AddFilterOptions(replay, *replay_args);
  replay->add_flag("--all", replay_args->all, "Every dead task of the namespace");
  replay->add_option("--payload", replay_args->payload, "New payload (JSON object), one id only")
      ->each([replay_args](const std::string&) { replay_args->has_payload = true; });
  replay->callback([&ctx, replay_args] { ctx.exit_code = RunReplay(ctx, *replay_args); });

  auto delete_args = std::make_shared<DlqArgs>();
  CLI::App* del = dlq->add_subcommand("delete", "Delete dead tasks for good");
  del->add_option("id", delete_args->id, "One task id");
  del->add_option("--ns", delete_args->ns, "Namespace")->required();
  AddFilterOptions(del, *delete_args);
  del->add_flag("--all", delete_args->all, "Every dead task of the namespace");
  del->callback(
      [&ctx, delete_args] { ctx.exit_code = RunDelete(ctx, *delete_args, "dlq delete"); });

  auto purge_args = std::make_shared<DlqArgs>();
  CLI::App* purge = dlq->add_subcommand(
      "purge", "Delete every dead task matching a filter (--type, --since, --until) or --all");
  purge->add_option("--ns", purge_args->ns, "Namespace")->required();
  AddFilterOptions(purge, *purge_args);
  purge->add_flag("--all", purge_args->all, "Every dead task of the namespace");
  purge->callback([&ctx, purge_args] { ctx.exit_code = RunDelete(ctx, *purge_args, "dlq purge"); });
}

}  // namespace baton::cli
