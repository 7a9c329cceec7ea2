// baton: the operator's command line for Baton (docs/cli.md).
#include <CLI/CLI.hpp>

#include "cli_context.h"
#include "commands.h"

int main(int argc, char** argv) {
  using namespace baton::cli;
  Context ctx;
  CLI::App app{"baton: enqueue, inspect and operate Baton task queues (docs/cli.md)", "baton"};
  app.option_defaults()->always_capture_default();
  app.add_option("--redis", ctx.global.redis_url,
                 "Redis URL (redis://[user:password@]host:port[/db])")
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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  return ctx.exit_code;
}
