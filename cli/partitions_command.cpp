// baton partitions NS [COUNT]: shows or raises the partition count of a namespace, which spreads
// it over several Redis Cluster slots (docs/cluster.md, "Partitions").
#include <iostream>

#include "broker/partitions.h"
#include "commands.h"
#include "output.h"

namespace baton::cli {

namespace {

struct PartitionsArgs {
  std::string ns;
  int count = 0;  // 0: show only
};

int Run(Context& ctx, const PartitionsArgs& args) {
  const char* command = "partitions";
  auto client = ctx.OpenClient();
  if (!client.ok()) return ctx.Fail(command, client.status());
  StatusOr<int> count = args.count == 0 ? (*client)->Partitions(args.ns)
                                        : (*client)->SetPartitions(args.ns, args.count);
  if (!count.ok()) return ctx.Fail(command, count.status());
  std::vector<std::string> names;
  for (int p = 0; p < *count; ++p) names.push_back(internal::PartitionNamespace(args.ns, p));
  if (ctx.global.json) {
    PrintJson({{"namespace", args.ns}, {"partitions", *count}, {"storage_namespaces", names}});
    return kExitOk;
  }
  std::cout << "namespace " << args.ns << ": " << *count
            << (*count == 1 ? " partition (" : " partitions (");
  for (std::size_t i = 0; i < names.size(); ++i) std::cout << (i ? ", " : "") << names[i];
  std::cout << ")\n";
  return kExitOk;
}

}  // namespace

void AddPartitionsCommand(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<PartitionsArgs>();
  CLI::App* cmd = app.add_subcommand(
      "partitions", "Show or raise the partition count of a namespace (spreads it over slots)");
  cmd->add_option("ns", args->ns, "Namespace")->required();
  cmd->add_option("count", args->count, "New partition count, 1..1024 (it only grows)")
      ->check(CLI::Range(1, internal::kMaxPartitions));
  cmd->footer(
      "Partition 0 is the namespace itself, partition p the storage namespace NS:p; producers "
      "send each task to fnv1a32(task_id) mod COUNT, workers serve every partition. See "
      "docs/cluster.md, 'Partitions'.");
  cmd->callback([&ctx, args] { ctx.exit_code = Run(ctx, *args); });
}

}  // namespace baton::cli
