// baton rescue start|status|finish: the disaster-recovery consumer group (docs/rescue.md).
#include <iostream>

#include "commands.h"
#include "output.h"

namespace baton::cli {

namespace {

struct RescueArgs {
  std::string ns;
  std::string type;
  std::string group = "baton";
  bool force = false;
};

void PrintProgress(const RescueProgress& p) {
  const RescueState& s = p.state;
  std::cout << "rescue of (" << s.ns << ", " << s.type << "): group " << s.group
            << " handed its backlog to " << s.rescue_group << "\n"
            << "  started       " << TimeText(s.started_ms) << "\n"
            << "  handover id   " << s.handover_id << " (the rescue owns entries up to it)\n"
            << "  backlog       " << s.backlog_at_start << " entries at start\n"
            << "  undelivered   " << p.undelivered << " (not yet taken by rescue workers)\n"
            << "  pending       " << p.rescue_pending << " (held by rescue workers)\n"
            << "  newer held    " << p.rescue_pending_after
            << " (entries after the handover held by rescue workers)\n"
            << "  G stuck left  " << p.group_pending_left << " (entries " << s.group
            << " held that the rescue has not finished)\n"
            << "  consumers     " << p.rescue_live_consumers << " live in " << s.rescue_group
            << ", " << p.group_live_consumers << " live in " << s.group << "\n";
  if (p.ready_to_finish) {
    std::cout << "ready to finish: run 'baton rescue finish --ns " << s.ns << " --type " << s.type
              << "'\n";
  } else if (p.undelivered + p.rescue_pending > 0) {
    std::cout << "not done: run fixed workers with '--group " << s.rescue_group
              << "' until undelivered and pending reach 0\n";
  } else {
    std::cout << "backlog drained: stop the rescue workers (they ack what they hold), then "
                 "finish\n";
  }
  if (p.group_live_consumers > 0) {
    std::cout << "note: " << s.group
              << " has live consumers; tasks enqueued during the rescue "
                 "may reach both groups (see docs/rescue.md)\n";
  }
}

int RunStart(Context& ctx, const RescueArgs& args) {
  auto inspector = ctx.OpenInspector();
  if (!inspector.ok()) return ctx.Fail("rescue start", inspector.status());
  auto progress = (*inspector)->RescueStart(args.ns, args.type, args.group);
  if (!progress.ok()) return ctx.Fail("rescue start", progress.status());
  if (ctx.global.json) {
    PrintJson(progress->ToJson());
  } else {
    PrintProgress(*progress);
    std::cout << "next: run the fixed workers with '--group " << progress->state.rescue_group
              << "', e.g. baton work --ns " << args.ns << " --type " << args.type << " --group "
              << progress->state.rescue_group << " --exec CMD\n";
  }
  return kExitOk;
}

int RunStatus(Context& ctx, const RescueArgs& args) {
  auto inspector = ctx.OpenInspector();
  if (!inspector.ok()) return ctx.Fail("rescue status", inspector.status());
  auto progress = (*inspector)->RescueStatus(args.ns, args.type);
  if (!progress.ok()) return ctx.Fail("rescue status", progress.status());
  if (ctx.global.json) {
    PrintJson(progress->ToJson());
  } else {
    PrintProgress(*progress);
  }
  return kExitOk;
}

int RunFinish(Context& ctx, const RescueArgs& args) {
  auto inspector = ctx.OpenInspector();
  if (!inspector.ok()) return ctx.Fail("rescue finish", inspector.status());
  auto result = (*inspector)->RescueFinish(args.ns, args.type, args.force);
  if (!result.ok()) {
    return ctx.Fail("rescue finish", result.status(),
                    "See 'baton rescue status --ns " + args.ns + " --type " + args.type + "'.");
  }
  if (ctx.global.json) {
    PrintJson(result->ToJson());
  } else {
    std::cout << "rescue finished: " << result->state.rescue_group << " destroyed; "
              << result->acked_in_group << " entries the rescue ran were acked in "
              << result->state.group << "; " << result->state.group << " continues after "
              << result->group_resumes_after << "\n";
    if (result->left_behind > 0) {
      std::cout << "warning: --force left " << result->left_behind
                << " entries of the backlog unfinished; " << result->state.group
                << " will not deliver them: start another rescue to run them\n";
    }
  }
  return kExitOk;
}

CLI::App* Sub(CLI::App* rescue, const std::string& name, const std::string& help,
              std::shared_ptr<RescueArgs>& args) {
  args = std::make_shared<RescueArgs>();
  CLI::App* cmd = rescue->add_subcommand(name, help);
  cmd->add_option("--ns", args->ns, "Namespace")->required();
  cmd->add_option("--type", args->type, "Task type")->required();
  return cmd;
}

}  // namespace

void AddRescueCommand(CLI::App& app, Context& ctx) {
  CLI::App* rescue = app.add_subcommand(
      "rescue", "Drain a broken consumer group's backlog with a clean group, then hand back");
  rescue->require_subcommand(1);

  std::shared_ptr<RescueArgs> start_args;
  CLI::App* start =
      Sub(rescue, "start", "Create <G>.rescue over G's backlog; G skips it", start_args);
  start->add_option("--group", start_args->group, "The broken consumer group G");
  start->callback([&ctx, start_args] { ctx.exit_code = RunStart(ctx, *start_args); });

  std::shared_ptr<RescueArgs> status_args;
  CLI::App* status = Sub(rescue, "status", "How much of the backlog is left", status_args);
  status->add_option("--group", status_args->group, "Ignored (the rescue state knows G)");
  status->callback([&ctx, status_args] { ctx.exit_code = RunStatus(ctx, *status_args); });

  std::shared_ptr<RescueArgs> finish_args;
  CLI::App* finish =
      Sub(rescue, "finish", "Hand the stream back to G and drop <G>.rescue", finish_args);
  finish->add_option("--group", finish_args->group, "Ignored (the rescue state knows G)");
  finish->add_flag("--force", finish_args->force,
                   "Finish even though the rescue group has not drained the backlog");
  finish->callback([&ctx, finish_args] { ctx.exit_code = RunFinish(ctx, *finish_args); });
}

}  // namespace baton::cli
