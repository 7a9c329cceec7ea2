// baton doctor ID --ns N: why a task has not run, in plain words (one verdict).
// baton doctor --ns N --type T: the health of a queue (every finding, worst first).
#include <algorithm>
#include <iostream>

#include "commands.h"
#include "option_rules.h"
#include "output.h"

namespace baton::cli {

namespace {

struct DoctorArgs {
  std::string id;
  std::string ns;
  std::string type;
  int live_window_s = 30;
};

void PrintVerdict(const Verdict& v) {
  std::cout << "[" << SeverityName(v.severity) << "] " << DoctorCodeName(v.code) << "\n  "
            << v.message << "\n";
}

int RunDoctor(Context& ctx, const DoctorArgs& args) {
  if (args.id.empty() == args.type.empty()) {
    return ctx.Usage("doctor",
                     "give a task id (baton doctor ID --ns N) or a queue (--type T), not "
                     "both");
  }
  InspectorOptions options;
  options.live_consumer_window = std::chrono::seconds(args.live_window_s);
  auto inspector = ctx.OpenInspector(options);
  if (!inspector.ok()) return ctx.Fail("doctor", inspector.status());
  if (!args.id.empty()) {
    auto verdict = (*inspector)->Doctor(args.ns, args.id);
    if (!verdict.ok()) return ctx.Fail("doctor", verdict.status());
    if (ctx.global.json) {
      PrintJson(verdict->ToJson());
    } else {
      std::cout << "task " << args.id << " in namespace " << args.ns << ":\n";
      PrintVerdict(*verdict);
    }
    return verdict->code == DoctorCode::kNotFound ? kExitNotFound : kExitOk;
  }
  // A partitioned namespace: every partition's queue, each diagnosed as its own namespace.
  std::vector<std::string> partitions = {args.ns};
  if (args.ns.find(':') == std::string::npos) {
    auto listed = (*inspector)->ListPartitions(args.ns);
    if (!listed.ok()) return ctx.Fail("doctor", listed.status());
    partitions = std::move(*listed);
  }
  std::vector<QueueDiagnosis> diagnoses;
  for (const std::string& ns : partitions) {
    auto diagnosis = (*inspector)->DoctorQueue(ns, args.type);
    if (!diagnosis.ok()) return ctx.Fail("doctor", diagnosis.status());
    diagnoses.push_back(std::move(*diagnosis));
  }
  if (ctx.global.json) {
    if (diagnoses.size() == 1) {
      PrintJson(diagnoses.front().ToJson());
    } else {
      nlohmann::json each = nlohmann::json::array();
      for (const QueueDiagnosis& d : diagnoses) each.push_back(d.ToJson());
      PrintJson({{"namespace", args.ns}, {"partitions", each}});
    }
  } else {
    for (std::size_t i = 0; i < diagnoses.size(); ++i) {
      const QueueInfo& q = diagnoses[i].queue;
      std::cout << "queue (" << partitions[i] << ", " << args.type << "): " << q.ready << " ready, "
                << q.in_flight << " in flight (" << q.expired_leases << " with an expired lease), "
                << q.delayed << " delayed, " << q.retrying << " retrying, " << q.dead
                << " dead; consumers " << q.live_consumers << " live of " << q.consumers
                << "; oldest entry "
                << (q.oldest_age_ms ? DurationText(*q.oldest_age_ms) : std::string("-")) << "\n";
      for (const Verdict& v : diagnoses[i].findings) PrintVerdict(v);
    }
  }
  // Unknown: no partition has the queue.
  bool unknown = std::all_of(diagnoses.begin(), diagnoses.end(), [](const QueueDiagnosis& d) {
    return d.findings.size() == 1 && d.findings.front().code == DoctorCode::kNotFound;
  });
  return unknown ? kExitNotFound : kExitOk;
}

}  // namespace

void AddDoctorCommand(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<DoctorArgs>();
  CLI::App* cmd = app.add_subcommand(
      "doctor", "Why a task has not run, or what is wrong with a queue, in plain words");
  cmd->add_option("id", args->id, "Task id");
  cmd->add_option("--ns", args->ns, "Namespace")->required();
  cmd->add_option("--type", args->type, "Diagnose this queue instead of one task");
  cmd->add_option("--live-window", args->live_window_s,
                  "Seconds: a consumer seen within this is alive")
      ->check(IntegerIn(1, 86400));
  cmd->callback([&ctx, args] { ctx.exit_code = RunDoctor(ctx, *args); });
}

}  // namespace baton::cli
