// baton pending: who holds which tasks of one queue, per consumer group and consumer, and the
// entries idle the longest (a stuck worker shows up here first).
#include <iostream>

#include "commands.h"
#include "output.h"

namespace baton::cli {

namespace {

struct PendingArgs {
  std::string ns;
  std::string type;
  int lease_ms = 15000;
};

int RunPending(Context& ctx, const PendingArgs& args) {
  InspectorOptions options;
  options.lease = std::chrono::milliseconds(args.lease_ms);
  auto inspector = ctx.OpenInspector(options);
  if (!inspector.ok()) return ctx.Fail("pending", inspector.status());
  auto report = (*inspector)->Pending(args.ns, args.type);
  if (!report.ok()) return ctx.Fail("pending", report.status());
  if (ctx.global.json) {
    PrintJson(report->ToJson());
    return kExitOk;
  }
  if (report->groups.empty()) {
    std::cout << "no consumer group on (" << args.ns << ", " << args.type
              << "): no worker has subscribed yet\n";
    return kExitOk;
  }
  for (const PendingGroup& g : report->groups) {
    std::cout << "group " << g.group << ": " << g.count << " pending"
              << (g.complete ? "" : " (idle times from the first entries only)") << "\n";
    if (g.consumers.empty()) continue;
    Table consumers({"  CONSUMER", "PENDING", "MAX_IDLE", "SEEN", "STUCK"});
    for (const PendingConsumer& c : g.consumers) {
      consumers.Add({"  " + c.name, std::to_string(c.count), DurationText(c.max_idle_ms),
                     DurationText(c.consumer_idle_ms) + " ago",
                     c.max_idle_ms > args.lease_ms ? "yes (idle > lease)" : ""});
    }
    consumers.Print(std::cout);
    Table entries({"  ENTRY", "TASK", "CONSUMER", "IDLE", "DELIVERIES"});
    for (const PendingEntry& e : g.longest_idle) {
      entries.Add({"  " + e.stream_id, e.task_id.empty() ? "(gone)" : e.task_id, e.consumer,
                   DurationText(e.idle_ms), std::to_string(e.deliveries)});
    }
    std::cout << "  idle the longest:\n";
    entries.Print(std::cout);
  }
  return kExitOk;
}

}  // namespace

void AddPendingCommand(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<PendingArgs>();
  CLI::App* cmd = app.add_subcommand("pending", "Tasks held by workers, per group and consumer");
  cmd->add_option("--ns", args->ns, "Namespace")->required();
  cmd->add_option("--type", args->type, "Task type")->required();
  cmd->add_option("--lease-ms", args->lease_ms, "The workers' lease: longer idle means stuck")
      ->check(CLI::PositiveNumber);
  cmd->callback([&ctx, args] { ctx.exit_code = RunPending(ctx, *args); });
}

}  // namespace baton::cli
