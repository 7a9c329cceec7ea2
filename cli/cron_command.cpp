// baton cron add|list|show|rm|enable|disable|next: cron job definitions in the hash baton:cron.
// Every definition is validated with CronJob::FromJson before it is written, so a bad cron line is
// refused here with the field and the rule, not discovered later by batond.
#include <date/tz.h>

#include <chrono>
#include <iostream>

#include "commands.h"
#include "cron/cron_job.h"
#include "cron_store.h"
#include "option_rules.h"
#include "output.h"

namespace baton::cli {

namespace {

using std::chrono::sys_seconds;

struct CronArgs {
  std::string name;
  std::string schedule;
  std::string tz = "UTC";
  std::string ns;
  std::string type;
  std::string payload = "{}";
  int max_retry = kDefaultMaxRetry;
  std::string missed = "skip";
  int timeout = 0;
  bool disabled = false;
  bool replace = false;
  std::size_t count = 5;
};

StatusOr<CronStore> OpenStore(Context& ctx) {
  auto conn = ctx.OpenConnection();
  if (!conn.ok()) return conn.status();
  return CronStore(std::move(*conn));
}

// The job `name`, parsed. kNotFound when missing.
StatusOr<internal::CronJob> LoadJob(CronStore& store, const std::string& name) {
  auto json = store.Get(name);
  if (!json.ok()) return json.status();
  if (!json->has_value()) return Status::NotFound("no cron job named " + name);
  auto job = internal::CronJob::FromJson(name, **json);
  if (!job.ok()) {
    return Status(job.status().code(),
                  "stored definition of " + name + " is invalid: " + job.status().message());
  }
  return job;
}

sys_seconds NowSeconds() {
  return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
}

std::string LocalText(sys_seconds t, const std::string& tz) {
  try {
    return date::format("%Y-%m-%d %H:%M:%S %Z", date::make_zoned(tz, t));
  } catch (const std::exception&) {
    return TimeText(t.time_since_epoch().count() * 1000);
  }
}

nlohmann::json NextJson(const std::vector<sys_seconds>& times, const std::string& tz) {
  nlohmann::json out = nlohmann::json::array();
  for (sys_seconds t : times) {
    std::int64_t unix_s = t.time_since_epoch().count();
    out.push_back(
        {{"unix", unix_s}, {"utc", TimeText(unix_s * 1000)}, {"local", LocalText(t, tz)}});
  }
  return out;
}

StatusOr<std::vector<sys_seconds>> NextTimes(const internal::CronJob& job, std::size_t n) {
  auto schedule = job.MakeSchedule();
  if (!schedule.ok()) return schedule.status();
  return schedule->NextN(NowSeconds(), n);
}

int RunAdd(Context& ctx, const CronArgs& args) {
  auto payload = nlohmann::json::parse(args.payload, nullptr, /*allow_exceptions=*/false);
  if (payload.is_discarded() || !payload.is_object()) {
    return ctx.Fail("cron add", Status::InvalidArgument("payload", "must be a JSON object"));
  }
  nlohmann::json definition = {{"schedule", args.schedule}, {"timezone", args.tz},
                               {"namespace", args.ns},      {"task_type", args.type},
                               {"payload", payload},        {"max_retry", args.max_retry},
                               {"enabled", !args.disabled}, {"missed", args.missed}};
  if (args.timeout > 0) definition["execution_timeout"] = args.timeout;
  auto job = internal::CronJob::FromJson(args.name, definition.dump());
  if (!job.ok()) return ctx.Fail("cron add", job.status());

  auto store = OpenStore(ctx);
  if (!store.ok()) return ctx.Fail("cron add", store.status());
  auto existing = store->Get(args.name);
  if (!existing.ok()) return ctx.Fail("cron add", existing.status());
  if (existing->has_value() && !args.replace) {
    return ctx.Fail("cron add", Status::Conflict("cron job " + args.name + " already exists"),
                    "Add --replace to overwrite it, or pick another name.");
  }
  if (Status s = store->Put(args.name, job->ToJson()); !s.ok()) return ctx.Fail("cron add", s);
  auto next = NextTimes(*job, 1);
  if (!next.ok()) return ctx.Fail("cron add", next.status());
  if (ctx.global.json) {
    PrintJson({{"name", args.name},
               {"definition", job->ToJsonObject()},
               {"replaced", existing->has_value()},
               {"next", NextJson(*next, job->timezone)}});
  } else {
    std::cout << (existing->has_value() ? "replaced" : "added") << " cron job " << args.name;
    if (!next->empty()) std::cout << ": next run at " << LocalText(next->front(), job->timezone);
    std::cout << (job->enabled ? "" : " (disabled)") << "\n";
  }
  return kExitOk;
}

int RunList(Context& ctx) {
  auto store = OpenStore(ctx);
  if (!store.ok()) return ctx.Fail("cron list", store.status());
  auto jobs = store->List();
  if (!jobs.ok()) return ctx.Fail("cron list", jobs.status());
  nlohmann::json out = nlohmann::json::array();
  Table table({"NAME", "ENABLED", "SCHEDULE", "TIMEZONE", "NAMESPACE", "TYPE", "MISSED", "NEXT"});
  for (const auto& [name, json] : *jobs) {
    auto job = internal::CronJob::FromJson(name, json);
    if (!job.ok()) {
      out.push_back({{"name", name}, {"valid", false}, {"error", job.status().message()}});
      table.Add({name, "-", "(invalid: " + job.status().message() + ")", "", "", "", "", ""});
      continue;
    }
    auto next = NextTimes(*job, 1);
    std::string next_text =
        next.ok() && !next->empty() ? LocalText(next->front(), job->timezone) : "-";
    out.push_back({{"name", name},
                   {"valid", true},
                   {"definition", job->ToJsonObject()},
                   {"next", next.ok() ? NextJson(*next, job->timezone) : nlohmann::json::array()}});
    table.Add({name, job->enabled ? "yes" : "no", job->schedule, job->timezone, job->ns,
               job->task_type, std::string(internal::MissedTickPolicyName(job->missed)),
               job->enabled ? next_text : "-"});
  }
  if (ctx.global.json) {
    PrintJson({{"jobs", out}});
  } else if (jobs->empty()) {
    std::cout << "no cron jobs\n";
  } else {
    table.Print(std::cout);
  }
  return kExitOk;
}

int RunShow(Context& ctx, const CronArgs& args, bool next_only) {
  std::string command = next_only ? "cron next" : "cron show";
  auto store = OpenStore(ctx);
  if (!store.ok()) return ctx.Fail(command, store.status());
  auto job = LoadJob(*store, args.name);
  if (!job.ok()) return ctx.Fail(command, job.status(), "See the jobs with 'baton cron list'.");
  auto next = NextTimes(*job, next_only ? args.count : 5);
  if (!next.ok()) return ctx.Fail(command, next.status());
  if (ctx.global.json) {
    nlohmann::json out = {
        {"name", args.name}, {"timezone", job->timezone}, {"next", NextJson(*next, job->timezone)}};
    if (!next_only) out["definition"] = job->ToJsonObject();
    PrintJson(out);
    return kExitOk;
  }
  if (!next_only) {
    std::cout << "name        " << args.name << "\n"
              << "definition  " << job->ToJson() << "\n"
              << "next runs" << (job->enabled ? "" : " (disabled: it will not fire)") << ":\n";
  }
  for (sys_seconds t : *next) {
    std::cout << (next_only ? "" : "  ") << LocalText(t, job->timezone);
    if (job->timezone != "UTC")
      std::cout << "  (" << TimeText(t.time_since_epoch().count() * 1000) << ")";
    std::cout << "\n";
  }
  return kExitOk;
}

int RunRemove(Context& ctx, const CronArgs& args) {
  auto store = OpenStore(ctx);
  if (!store.ok()) return ctx.Fail("cron rm", store.status());
  if (Status s = store->Remove(args.name); !s.ok()) {
    return ctx.Fail("cron rm", s, "See the jobs with 'baton cron list'.");
  }
  if (ctx.global.json) {
    PrintJson({{"name", args.name}, {"removed", true}});
  } else {
    std::cout << "removed cron job " << args.name << "\n";
  }
  return kExitOk;
}

int RunEnable(Context& ctx, const CronArgs& args, bool enabled) {
  std::string command = enabled ? "cron enable" : "cron disable";
  auto store = OpenStore(ctx);
  if (!store.ok()) return ctx.Fail(command, store.status());
  auto job = LoadJob(*store, args.name);
  if (!job.ok()) return ctx.Fail(command, job.status(), "See the jobs with 'baton cron list'.");
  job->enabled = enabled;
  if (Status s = store->Put(args.name, job->ToJson()); !s.ok()) return ctx.Fail(command, s);
  if (ctx.global.json) {
    PrintJson({{"name", args.name}, {"enabled", enabled}});
  } else {
    std::cout << (enabled ? "enabled" : "disabled") << " cron job " << args.name << "\n";
  }
  return kExitOk;
}

CLI::App* NamedCommand(CLI::App* cron, const std::string& verb, const std::string& help,
                       std::shared_ptr<CronArgs>& args) {
  args = std::make_shared<CronArgs>();
  CLI::App* cmd = cron->add_subcommand(verb, help);
  cmd->add_option("name", args->name, "Job name")->required();
  return cmd;
}

}  // namespace

void AddCronCommand(CLI::App& app, Context& ctx) {
  CLI::App* cron = app.add_subcommand("cron", "Cron jobs: tasks enqueued on a schedule by batond");
  cron->require_subcommand(1);

  std::shared_ptr<CronArgs> add_args;
  CLI::App* add = NamedCommand(cron, "add", "Add (or --replace) a cron job", add_args);
  add->add_option("--schedule", add_args->schedule,
                  "Cron line: 'min hour dom mon dow' (or 6 fields with seconds, or @daily)")
      ->required();
  add->add_option("--tz", add_args->tz, "IANA time zone of the schedule");
  add->add_option("--ns", add_args->ns, "Namespace of the tasks")->required();
  add->add_option("--type", add_args->type, "Task type of the tasks")->required();
  add->add_option("--payload", add_args->payload, "Payload of every task, a JSON object");
  add->add_option("--max-retry", add_args->max_retry, "Retries of each task");
  add->add_option("--missed", add_args->missed,
                  "Ticks missed while no scheduler ran: skip or run_once");
  add->add_option("--timeout", add_args->timeout, "execution_timeout of each task, seconds");
  add->add_flag("--disabled", add_args->disabled, "Store it disabled");
  add->add_flag("--replace", add_args->replace, "Overwrite an existing job of that name");
  add->callback([&ctx, add_args] { ctx.exit_code = RunAdd(ctx, *add_args); });

  CLI::App* list = cron->add_subcommand("list", "Every cron job with its next run");
  list->callback([&ctx] { ctx.exit_code = RunList(ctx); });

  std::shared_ptr<CronArgs> show_args;
  NamedCommand(cron, "show", "One job's definition and next 5 runs", show_args)
      ->callback([&ctx, show_args] { ctx.exit_code = RunShow(ctx, *show_args, false); });

  std::shared_ptr<CronArgs> rm_args;
  NamedCommand(cron, "rm", "Remove a cron job", rm_args)->callback([&ctx, rm_args] {
    ctx.exit_code = RunRemove(ctx, *rm_args);
  });

  std::shared_ptr<CronArgs> enable_args;
  NamedCommand(cron, "enable", "Let a job fire again", enable_args)->callback([&ctx, enable_args] {
    ctx.exit_code = RunEnable(ctx, *enable_args, true);
  });

  std::shared_ptr<CronArgs> disable_args;
  NamedCommand(cron, "disable", "Stop a job from firing (keeps its definition)", disable_args)
      ->callback([&ctx, disable_args] { ctx.exit_code = RunEnable(ctx, *disable_args, false); });

  std::shared_ptr<CronArgs> next_args;
  CLI::App* next = NamedCommand(cron, "next", "The next fire times of a job", next_args);
  next->add_option("-n", next_args->count, "How many")->check(IntegerIn(1, 1000));
  next->callback([&ctx, next_args] { ctx.exit_code = RunShow(ctx, *next_args, true); });
}

}  // namespace baton::cli
