// baton cron add|list|show|rm|enable|disable|next: cron job definitions in the hash baton:cron,
// through the library's CronClient (include/baton/cron.h). Every definition is validated with
// CronJob::FromJson before anything is sent, so a bad cron line is refused here with the field and
// the rule (even without Redis), not discovered later by batond.
#include <date/tz.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "baton/cron.h"
#include "commands.h"
#include "cron/cron_job.h"
#include "option_rules.h"
#include "output.h"
#include "time_arg.h"

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
  std::string from;  // cron next --from: preview from this time instead of now
};

StatusOr<std::unique_ptr<CronClient>> OpenCron(Context& ctx) {
  CronClientOptions options;
  options.redis = ctx.global.redis;
  return CronClient::Connect(options);
}

// The job `name`. kNotFound when missing; kInvalidArgument when its stored definition is invalid.
StatusOr<internal::CronJob> LoadJob(CronClient& cron, const std::string& name) {
  auto job = cron.Get(name);
  if (!job.ok()) return job.status();
  if (!job->has_value()) return Status::NotFound("no cron job named " + name);
  return internal::CronJob{**job};
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

// Fire times with what an operator needs to trust them: a time past the zone's rules (tzdata
// lists DST changes up to 2037) carries a warning, since its local time may be wrong.
struct FireTimes {
  std::vector<sys_seconds> times;
  std::vector<bool> past_zone_data;  // by index
};

constexpr const char* kPastZoneDataWarning =
    "past the time zone data (DST rules known until 2037): the local time may be wrong";

nlohmann::json NextJson(const FireTimes& next, const std::string& tz) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < next.times.size(); ++i) {
    sys_seconds t = next.times[i];
    std::int64_t unix_s = t.time_since_epoch().count();
    nlohmann::json one = {
        {"unix", unix_s}, {"utc", TimeText(unix_s * 1000)}, {"local", LocalText(t, tz)}};
    if (next.past_zone_data[i]) one["warning"] = kPastZoneDataWarning;
    out.push_back(std::move(one));
  }
  return out;
}

StatusOr<FireTimes> NextTimes(const internal::CronJob& job, std::size_t n,
                              sys_seconds after = NowSeconds()) {
  auto schedule = job.MakeSchedule();
  if (!schedule.ok()) return schedule.status();
  FireTimes out;
  out.times = schedule->NextN(after, n);
  for (sys_seconds t : out.times) out.past_zone_data.push_back(schedule->PastZoneData(t));
  return out;
}

// One fire time as a text line: local time, UTC when the zone is not UTC, and the warning.
std::string FireTimeLine(const FireTimes& next, std::size_t i, const std::string& tz) {
  std::string line = LocalText(next.times[i], tz);
  if (tz != "UTC") line += "  (" + TimeText(next.times[i].time_since_epoch().count() * 1000) + ")";
  if (next.past_zone_data[i]) line += std::string("  warning: ") + kPastZoneDataWarning;
  return line;
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

  auto cron = OpenCron(ctx);
  if (!cron.ok()) return ctx.Fail("cron add", cron.status());
  // Add only creates; with --replace an existing job is overwritten by Put.
  Status written = (*cron)->Add(*job);
  const bool replaced = written.code() == StatusCode::kAlreadyExists && args.replace;
  if (replaced) written = (*cron)->Put(*job);
  if (!written.ok()) {
    return ctx.Fail("cron add", written,
                    written.code() == StatusCode::kAlreadyExists
                        ? "Add --replace to overwrite it, or pick another name."
                        : "");
  }
  auto next = NextTimes(*job, 1);
  if (!next.ok()) return ctx.Fail("cron add", next.status());
  if (ctx.global.json) {
    PrintJson({{"name", args.name},
               {"definition", job->ToJsonObject()},
               {"replaced", replaced},
               {"next", NextJson(*next, job->timezone)}});
  } else {
    std::cout << (replaced ? "replaced" : "added") << " cron job " << args.name;
    if (!next->times.empty())
      std::cout << ": next run at " << FireTimeLine(*next, 0, job->timezone);
    std::cout << (job->enabled ? "" : " (disabled)") << "\n";
  }
  return kExitOk;
}

int RunList(Context& ctx) {
  auto cron = OpenCron(ctx);
  if (!cron.ok()) return ctx.Fail("cron list", cron.status());
  auto list = (*cron)->List();
  if (!list.ok()) return ctx.Fail("cron list", list.status());
  // One row per stored job, readable or not, in name order.
  struct Row {
    std::string name;
    nlohmann::json json;
    std::vector<std::string> cells;
  };
  std::vector<Row> rows;
  for (const CronJobSpec& spec : list->jobs) {
    const internal::CronJob job{spec};
    auto next = NextTimes(job, 1);
    std::string next_text =
        next.ok() && !next->times.empty() ? LocalText(next->times.front(), job.timezone) : "-";
    rows.push_back(
        {job.name,
         {{"name", job.name},
          {"valid", true},
          {"definition", job.ToJsonObject()},
          {"next", next.ok() ? NextJson(*next, job.timezone) : nlohmann::json::array()}},
         {job.name, job.enabled ? "yes" : "no", job.schedule, job.timezone, job.ns, job.task_type,
          std::string(internal::MissedTickPolicyName(job.missed)), job.enabled ? next_text : "-"}});
  }
  for (const UnreadableCronJob& bad : list->unreadable) {
    rows.push_back({bad.name,
                    {{"name", bad.name}, {"valid", false}, {"error", bad.error}},
                    {bad.name, "-", "(invalid: " + bad.error + ")", "", "", "", "", ""}});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.name < b.name; });
  nlohmann::json out = nlohmann::json::array();
  Table table({"NAME", "ENABLED", "SCHEDULE", "TIMEZONE", "NAMESPACE", "TYPE", "MISSED", "NEXT"});
  for (Row& row : rows) {
    out.push_back(std::move(row.json));
    table.Add(std::move(row.cells));
  }
  if (ctx.global.json) {
    PrintJson({{"jobs", out}});
  } else if (rows.empty()) {
    std::cout << "no cron jobs\n";
  } else {
    table.Print(std::cout);
  }
  return kExitOk;
}

int RunShow(Context& ctx, const CronArgs& args) {
  auto cron = OpenCron(ctx);
  if (!cron.ok()) return ctx.Fail("cron show", cron.status());
  auto job = LoadJob(**cron, args.name);
  if (!job.ok()) return ctx.Fail("cron show", job.status(), "See the jobs with 'baton cron list'.");
  auto next = NextTimes(*job, 5);
  if (!next.ok()) return ctx.Fail("cron show", next.status());
  if (ctx.global.json) {
    PrintJson({{"name", args.name},
               {"timezone", job->timezone},
               {"enabled", job->enabled},
               {"next", NextJson(*next, job->timezone)},
               {"definition", job->ToJsonObject()}});
    return kExitOk;
  }
  std::cout << "name        " << args.name << "\n"
            << "definition  " << job->ToJson() << "\n"
            << "next runs" << (job->enabled ? "" : " (disabled: it will not fire)") << ":\n";
  for (std::size_t i = 0; i < next->times.size(); ++i) {
    std::cout << "  " << FireTimeLine(*next, i, job->timezone) << "\n";
  }
  return kExitOk;
}

// cron next: a stored job's fire times, or an inline --schedule's (nothing is written), from now
// or from --from (to check a job across a DST change before storing it).
int RunNext(Context& ctx, const CronArgs& args) {
  const bool inline_schedule = !args.schedule.empty();
  if (inline_schedule && !args.name.empty()) {
    return ctx.Fail("cron next",
                    Status::InvalidArgument("schedule", "give a job name or --schedule, not both"));
  }
  if (!inline_schedule && args.name.empty()) {
    return ctx.Fail("cron next", Status::InvalidArgument("name", "required"),
                    "Give a stored job's name, or --schedule (and --tz) to preview a cron line: "
                    "baton cron next --schedule \"30 2 * * *\" --tz Europe/Berlin --from "
                    "2030-03-30");
  }
  sys_seconds from = NowSeconds();
  if (!args.from.empty()) {
    auto ms = ParseTimeArg("from", args.from, from.time_since_epoch().count() * 1000);
    if (!ms.ok()) return ctx.Fail("cron next", ms.status());
    // Fire times strictly after `from`: a job due exactly at --from is listed.
    from = sys_seconds{std::chrono::seconds{*ms / 1000 - 1}};
  }
  internal::CronJob job;
  if (inline_schedule) {
    job.schedule = args.schedule;
    job.timezone = args.tz;
  } else {
    auto cron = OpenCron(ctx);
    if (!cron.ok()) return ctx.Fail("cron next", cron.status());
    auto stored = LoadJob(**cron, args.name);
    if (!stored.ok()) {
      return ctx.Fail("cron next", stored.status(), "See the jobs with 'baton cron list'.");
    }
    job = std::move(*stored);
  }
  auto next = NextTimes(job, args.count, from);
  if (!next.ok()) return ctx.Fail("cron next", next.status());
  if (ctx.global.json) {
    nlohmann::json out = {{"timezone", job.timezone},
                          {"enabled", job.enabled},
                          {"next", NextJson(*next, job.timezone)}};
    if (inline_schedule) {
      out["schedule"] = job.schedule;
    } else {
      out["name"] = args.name;
    }
    PrintJson(out);
    return kExitOk;
  }
  if (!job.enabled) {
    std::cout << "(disabled: these times will not fire until 'baton cron enable " << args.name
              << "')\n";
  }
  for (std::size_t i = 0; i < next->times.size(); ++i) {
    std::cout << FireTimeLine(*next, i, job.timezone) << "\n";
  }
  return kExitOk;
}

int RunRemove(Context& ctx, const CronArgs& args) {
  auto cron = OpenCron(ctx);
  if (!cron.ok()) return ctx.Fail("cron rm", cron.status());
  if (Status s = (*cron)->Remove(args.name); !s.ok()) {
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
  auto cron = OpenCron(ctx);
  if (!cron.ok()) return ctx.Fail(command, cron.status());
  if (Status s = (*cron)->SetEnabled(args.name, enabled); !s.ok()) {
    return ctx.Fail(
        command, s,
        s.code() == StatusCode::kNotFound ? "See the jobs with 'baton cron list'." : "");
  }
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
      ->callback([&ctx, show_args] { ctx.exit_code = RunShow(ctx, *show_args); });

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

  auto next_args = std::make_shared<CronArgs>();
  CLI::App* next = cron->add_subcommand(
      "next", "The next fire times of a stored job, or of a --schedule given here (not stored)");
  next->add_option("name", next_args->name, "Job name (or use --schedule)");
  next->add_option("--schedule", next_args->schedule, "A cron line to preview instead of a job");
  next->add_option("--tz", next_args->tz, "IANA time zone of --schedule");
  next->add_option("--from", next_args->from,
                   "Preview from this time instead of now: Unix seconds or a UTC date-time "
                   "(2030-03-30, 2030-03-30T23:00:00Z)");
  next->add_option("-n", next_args->count, "How many")->check(IntegerIn(1, 1000));
  next->callback([&ctx, next_args] { ctx.exit_code = RunNext(ctx, *next_args); });
}

}  // namespace baton::cli
