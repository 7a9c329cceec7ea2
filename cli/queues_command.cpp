// baton queues: every queue (namespace, task type) with its counts: ready, in flight, delayed,
// retrying, dead, consumers, age of the oldest entry, done in the last minute.
#include <iostream>

#include "commands.h"
#include "output.h"

namespace baton::cli {

namespace {

struct QueuesArgs {
  std::string ns;
};

int RunQueues(Context& ctx, const QueuesArgs& args) {
  auto inspector = ctx.OpenInspector();
  if (!inspector.ok()) return ctx.Fail("queues", inspector.status());
  std::vector<std::string> namespaces;
  if (!args.ns.empty() && args.ns.find(':') == std::string::npos) {
    // A namespace and every partition of it.
    auto partitions = (*inspector)->ListPartitions(args.ns);
    if (!partitions.ok()) return ctx.Fail("queues", partitions.status());
    namespaces = std::move(*partitions);
  } else if (!args.ns.empty()) {
    namespaces.push_back(args.ns);  // one partition, "shop:2"
  } else {
    auto all = (*inspector)->ListNamespaces();
    if (!all.ok()) return ctx.Fail("queues", all.status());
    namespaces = std::move(*all);
  }
  std::vector<QueueInfo> queues;
  for (const auto& ns : namespaces) {
    auto list = (*inspector)->ListQueues(ns);
    if (!list.ok()) return ctx.Fail("queues", list.status());
    for (auto& q : *list) queues.push_back(std::move(q));
  }
  if (ctx.global.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& q : queues) out.push_back(q.ToJson());
    PrintJson({{"queues", out}});
    return kExitOk;
  }
  if (queues.empty()) {
    std::cout << "no queues" << (args.ns.empty() ? "" : " in namespace " + args.ns)
              << " (nothing enqueued yet?)\n";
    return kExitOk;
  }
  Table table({"NAMESPACE", "TYPE", "READY", "IN_FLIGHT", "DELAYED", "RETRYING", "DEAD",
               "CONSUMERS", "OLDEST", "DONE/MIN"});
  for (const auto& q : queues) {
    std::string in_flight = std::to_string(q.in_flight);
    if (q.expired_leases > 0) in_flight += " (" + std::to_string(q.expired_leases) + " expired)";
    table.Add({q.ns, q.type, std::to_string(q.ready) + (q.ready_exact ? "" : "~"), in_flight,
               std::to_string(q.delayed) + (q.scheduled_split_exact ? "" : "~"),
               std::to_string(q.retrying) + (q.scheduled_split_exact ? "" : "~"),
               std::to_string(q.dead),
               std::to_string(q.live_consumers) + "/" + std::to_string(q.consumers),
               q.oldest_age_ms ? DurationText(*q.oldest_age_ms) : "-",
               std::to_string(q.rates.done) + (q.rates.exact ? "" : "~")});
  }
  table.Print(std::cout);
  return kExitOk;
}

}  // namespace

void AddQueuesCommand(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<QueuesArgs>();
  CLI::App* cmd = app.add_subcommand("queues", "List queues and their counts");
  cmd->add_option("--ns", args->ns, "Only this namespace (default: every namespace)");
  cmd->footer(
      "READY counts the entries after the group's position in the stream. IN_FLIGHT says how many "
      "leases expired without being taken back. CONSUMERS is live/all (live: seen in the last "
      "30 s). '~' marks an estimate (see docs/cli.md).");
  cmd->callback([&ctx, args] { ctx.exit_code = RunQueues(ctx, *args); });
}

}  // namespace baton::cli
