// baton pending: who holds which tasks of one queue, per consumer group and consumer, the
// entries not delivered or renewed for the longest, and their leases (a stuck worker's leases
// expire: it shows up here first).
#include <iostream>

#include "commands.h"
#include "output.h"

namespace baton::cli {

namespace {

struct PendingArgs {
  std::string ns;
  std::string type;
};

// "in 12 s" / "expired 3 s ago" / "none".
std::string LeaseText(const std::optional<std::int64_t>& deadline, std::int64_t now) {
  if (!deadline) return "none";
  if (*deadline >= now) return "in " + DurationText(*deadline - now);
  return "expired " + DurationText(now - *deadline) + " ago";
}

int RunPending(Context& ctx, const PendingArgs& args) {
  auto inspector = ctx.OpenInspector();
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
    Table consumers({"  CONSUMER", "PENDING", "MAX_IDLE", "SEEN", "EXPIRED"});
    for (const PendingConsumer& c : g.consumers) {
      consumers.Add({"  " + c.name, std::to_string(c.count), DurationText(c.max_idle_ms),
                     DurationText(c.consumer_idle_ms) + " ago",
                     c.expired > 0 ? std::to_string(c.expired) + " (lease expired)" : ""});
    }
    consumers.Print(std::cout);
    Table entries({"  ENTRY", "TASK", "CONSUMER", "IDLE", "DELIVERIES", "LEASE"});
    for (const PendingEntry& e : g.longest_idle) {
      entries.Add({"  " + e.stream_id, e.task_id.empty() ? "(gone)" : e.task_id, e.consumer,
                   DurationText(e.idle_ms), std::to_string(e.deliveries),
                   LeaseText(e.lease_deadline_ms, report->now_ms)});
    }
    std::cout << "  not delivered or renewed for the longest:\n";
    entries.Print(std::cout);
  }
  if (report->expired_leases > 0) {
    std::cout << report->expired_leases << " lease(s) of (" << args.ns << ", " << args.type
              << ") expired and were not taken back: is a lease reaper running (batond, or a "
                 "worker with maintenance on)?\n";
  }
  return kExitOk;
}

}  // namespace

void AddPendingCommand(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<PendingArgs>();
  CLI::App* cmd = app.add_subcommand("pending", "Tasks held by workers, per group and consumer");
  cmd->add_option("--ns", args->ns, "Namespace")->required();
  cmd->add_option("--type", args->type, "Task type")->required();
  cmd->footer(
      "A delivered task's lease ends its consumer's lease length (leases:TYPE, else the "
      "namespace's lease_ms) after its delivery or the worker's last heartbeat: IDLE counts from "
      "there. An expired lease means the worker stopped heartbeating.");
  cmd->callback([&ctx, args] { ctx.exit_code = RunPending(ctx, *args); });
}

}  // namespace baton::cli
