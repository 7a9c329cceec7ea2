// baton init: loads (or upgrades) the `baton` Redis Functions library this build embeds, and
// prints its version. --check only compares the loaded version with this build's.
#include <iostream>

#include "broker/function_library.h"
#include "commands.h"
#include "output.h"

namespace baton::cli {

namespace {

struct InitArgs {
  bool check = false;
};

// The loaded version, "none" when the library is missing.
StatusOr<std::string> LoadedVersion(internal::RedisConnection& conn) {
  auto reply = conn.Command({"FCALL_RO", "baton_version", "0"});
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) return std::string("none");
  return reply->AsString();
}

int RunInit(Context& ctx, const InitArgs& args) {
  auto conn = ctx.OpenConnection();
  if (!conn.ok()) return ctx.Fail("init", conn.status());
  auto before = LoadedVersion(**conn);
  if (!before.ok()) return ctx.Fail("init", before.status());
  const std::string wanted(internal::kFunctionLibraryVersion);
  if (args.check) {
    bool same = *before == wanted;
    if (ctx.global.json) {
      PrintJson({{"library", "baton"}, {"loaded", *before}, {"needed", wanted}, {"ok", same}});
    } else if (same) {
      std::cout << "functions library 'baton' version " << wanted << " is loaded\n";
    }
    if (!same) {
      return ctx.Fail(
          "init",
          Status(StatusCode::kVersionMismatch, "functions library version " + *before +
                                                   " loaded in Redis, this build needs " + wanted),
          "Run 'baton init' to load it.");
    }
    return kExitOk;
  }
  std::string loaded;
  if (Status s = internal::LoadFunctionLibrary(**conn, &loaded); !s.ok()) {
    return ctx.Fail("init", s);
  }
  if (ctx.global.json) {
    PrintJson({{"library", "baton"},
               {"version", loaded},
               {"previous", *before},
               {"changed", *before != loaded}});
  } else {
    std::cout << "functions library 'baton' version " << loaded << " loaded (was: " << *before
              << ")\n";
  }
  return kExitOk;
}

}  // namespace

void AddInitCommand(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<InitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "init", "Load or upgrade the Redis Functions library 'baton' and print its version");
  cmd->add_flag("--check", args->check,
                "Only check that the loaded version is this build's (exit 4 if not)");
  cmd->callback([&ctx, args] { ctx.exit_code = RunInit(ctx, *args); });
}

}  // namespace baton::cli
