// baton: the operator's command line for Baton (docs/cli.md).
#include <CLI/CLI.hpp>

#include "cli_context.h"
#include "commands.h"

namespace {

// The subcommands the parser reached: "cron next"; "" before any.
std::string CommandPath(const CLI::App& app) {
  std::string path;
  const CLI::App* at = &app;
  for (auto subs = at->get_subcommands(); !subs.empty(); subs = at->get_subcommands()) {
    at = subs.front();
    path += (path.empty() ? "" : " ") + at->get_name();
  }
  return path;
}

// A parse failure goes the way of every other failure (Context::Fail / Context::Usage): a value
// the option refuses is a bad value (invalid_argument, exit 1, "--OPTION: RULE"); anything else is
// a bad command line (exit 2). Either way --json also gets the {"error": ...} document.
int ReportParseError(const CLI::App& app, baton::cli::Context& ctx, const CLI::ParseError& e) {
  ctx.global.json = ctx.global.json || app.get_option("--json")->count() > 0;
  const std::string command = CommandPath(app);
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr) {
    // "--delay: must be an integer 0..31536000 (got -5)"
    std::size_t colon = what.find(": ");
    if (colon != std::string::npos) {
      return ctx.Fail(
          command, baton::Status::InvalidArgument(what.substr(0, colon), what.substr(colon + 2)));
    }
    return ctx.Fail(command, baton::Status(baton::StatusCode::kInvalidArgument, what));
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
    // "Could not convert: --unique-ttl = abc"
    constexpr std::string_view kPrefix = "Could not convert: ";
    std::size_t eq = what.find(" = ");
    if (what.rfind(kPrefix, 0) == 0 && eq != std::string::npos) {
      std::string option = what.substr(kPrefix.size(), eq - kPrefix.size());
      return ctx.Fail(command, baton::Status::InvalidArgument(
                                   option, "is not a valid value of this option, see --help (got " +
                                               what.substr(eq + 3) + ")"));
    }
    return ctx.Fail(command, baton::Status(baton::StatusCode::kInvalidArgument, what));
  }
  return ctx.Usage(command, what);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace baton::cli;
  Context ctx;
  CLI::App app{"baton: enqueue, inspect and operate Baton task queues (docs/cli.md)", "baton"};
  app.option_defaults()->always_capture_default();
  app.add_option("--redis", ctx.global.redis.url,
                 "Redis URL (redis://[user:password@]host:port[/db], or "
                 "redis+cluster://host:port[,host:port...] for a cluster)")
      ->envname("BATON_REDIS_URL");
  app.add_flag("--json", ctx.global.json, "Print one JSON document instead of text");
  app.require_subcommand(1);
  // Global options may follow the subcommand: `baton queues --json`.
  app.fallthrough();

  AddInitCommand(app, ctx);
  AddEnqueueCommand(app, ctx);
  AddTaskCommand(app, ctx);
  AddQueuesCommand(app, ctx);
  AddPendingCommand(app, ctx);
  AddDlqCommand(app, ctx);
  AddCronCommand(app, ctx);
  AddWorkCommand(app, ctx);
  AddDoctorCommand(app, ctx);
  AddRescueCommand(app, ctx);
  AddConfigCommand(app, ctx);
  AddPartitionsCommand(app, ctx);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return ReportParseError(app, ctx, e);
  }
  return ctx.exit_code;
}
