// baton init: loads (or upgrades) the `baton_v2` Redis Functions library this build embeds, and
// prints its version. --check only compares the loaded version with this build's. A protocol v1
// library (`baton`) stays loaded beside v2 during a rolling upgrade (docs/upgrading.md); init
// reports the v1 tasks still live, and --drop-v1 removes the v1 library once they are gone.
#include <algorithm>
#include <iostream>
#include <utility>

#include "broker/function_library.h"
#include "broker/functions.h"
#include "commands.h"
#include "output.h"

namespace baton::cli {

namespace {

struct InitArgs {
  bool check = false;
  bool drop_v1 = false;
  bool force = false;
};

// The loaded version of a library's version function, "none" when it is missing. On a cluster,
// every primary is asked; when they differ: "2 on host:port, none on host:port".
StatusOr<std::string> LoadedVersion(internal::RedisConnection& conn,
                                    const std::vector<std::string>& call) {
  std::vector<std::pair<std::string, std::string>> versions;  // node, version
  for (const std::string& node : conn.Nodes()) {
    auto reply = conn.CommandOnNode(node, call);
    if (!reply.ok()) return reply.status();
    versions.emplace_back(node, reply->is_error() ? std::string("none") : reply->AsString());
  }
  const bool same = std::all_of(versions.begin(), versions.end(),
                                [&](const auto& v) { return v.second == versions[0].second; });
  if (same) return versions.at(0).second;
  std::string mixed;
  for (const auto& [node, version] : versions) {
    mixed += (mixed.empty() ? "" : ", ") + version + " on " + node;
  }
  return mixed;
}

// What is left of protocol v1: its library version ("none" when not loaded) and the live tasks
// in its keyspace (baton:{NS}:tasks of every namespace in baton:namespaces).
struct LegacyState {
  std::string version = "none";
  long long live_tasks = 0;
  std::vector<std::string> namespaces;  // those with live v1 tasks
};

StatusOr<LegacyState> ReadLegacy(internal::RedisConnection& conn) {
  LegacyState state;
  // The v1 wire form, spelled out here on purpose: v1 is not a protocol this build speaks.
  auto version = LoadedVersion(conn, {"FCALL_RO", "baton_version", "0"});
  if (!version.ok()) return version.status();
  state.version = *version;
  auto members = conn.Command({"SMEMBERS", "baton:namespaces"});
  if (!members.ok()) return members.status();
  for (const internal::Reply& ns : members->elements) {
    auto live = conn.Command({"HLEN", "baton:{" + ns.AsString() + "}:tasks"});
    if (!live.ok()) return live.status();
    if (live->AsInteger() > 0) {
      state.live_tasks += live->AsInteger();
      state.namespaces.push_back(ns.AsString());
    }
  }
  return state;
}

nlohmann::json LegacyJson(const LegacyState& legacy) {
  return {{"version", legacy.version},
          {"live_tasks", legacy.live_tasks},
          {"namespaces", legacy.namespaces}};
}

void PrintLegacy(const LegacyState& legacy) {
  if (legacy.version == "none" && legacy.live_tasks == 0) return;
  std::cout << "protocol v1: library 'baton' " << (legacy.version == "none" ? "not " : "")
            << "loaded, " << legacy.live_tasks << " live v1 task(s)";
  if (!legacy.namespaces.empty()) {
    std::cout << " in";
    for (const std::string& ns : legacy.namespaces) std::cout << ' ' << ns;
  }
  std::cout << ". Keep v1 workers running until they are 0, then 'baton init --drop-v1' "
               "(docs/upgrading.md).\n";
}

int DropV1(Context& ctx, internal::RedisConnection& conn, const InitArgs& args) {
  auto legacy = ReadLegacy(conn);
  if (!legacy.ok()) return ctx.Fail("init", legacy.status());
  if (legacy->live_tasks > 0 && !args.force) {
    return ctx.Fail("init",
                    Status::Conflict(std::to_string(legacy->live_tasks) +
                                     " live v1 task(s) would be stranded without v1 functions"),
                    "Let v1 workers drain them (baton init shows the count), or use --force.");
  }
  bool dropped = false;
  if (legacy->version != "none") {
    for (const std::string& node : conn.Nodes()) {
      auto reply = conn.CommandOnNode(node, {"FUNCTION", "DELETE", "baton"});
      if (!reply.ok()) return ctx.Fail("init", reply.status());
      // A primary without it (a mixed cluster) is fine: gone is what was asked.
      if (reply->is_error() && reply->str.find("not found") == std::string::npos) {
        return ctx.Fail("init", internal::StatusFromErrorReply(*reply));
      }
    }
    dropped = true;
  }
  if (ctx.global.json) {
    PrintJson({{"dropped_v1", dropped}, {"v1", LegacyJson(*legacy)}});
  } else {
    std::cout << (dropped ? "protocol v1 library 'baton' deleted\n"
                          : "protocol v1 library 'baton' was not loaded\n");
  }
  return kExitOk;
}

int RunInit(Context& ctx, const InitArgs& args) {
  auto conn = ctx.OpenConnection();
  if (!conn.ok()) return ctx.Fail("init", conn.status());
  if (args.drop_v1) return DropV1(ctx, **conn, args);
  auto before = LoadedVersion(**conn, internal::fn::Version());
  if (!before.ok()) return ctx.Fail("init", before.status());
  const std::string library(internal::protocol::kLibrary);
  const std::string wanted(internal::kFunctionLibraryVersion);
  if (args.check) {
    bool same = *before == wanted;
    if (ctx.global.json) {
      PrintJson({{"library", library}, {"loaded", *before}, {"needed", wanted}, {"ok", same}});
    } else if (same) {
      std::cout << "functions library '" << library << "' version " << wanted << " is loaded\n";
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
  auto legacy = ReadLegacy(**conn);
  if (!legacy.ok()) return ctx.Fail("init", legacy.status());
  const std::size_t primaries = (*conn)->cluster() ? (*conn)->Nodes().size() : 0;
  if (ctx.global.json) {
    nlohmann::json out = {{"library", library},
                          {"version", loaded},
                          {"previous", *before},
                          {"changed", *before != loaded},
                          {"v1", LegacyJson(*legacy)}};
    if ((*conn)->cluster()) out["primaries"] = (*conn)->Nodes();
    PrintJson(out);
  } else {
    std::cout << "functions library '" << library << "' version " << loaded << " loaded"
              << (primaries > 0 ? " on " + std::to_string(primaries) + " primaries" : "")
              << " (was: " << *before << ")\n";
    PrintLegacy(*legacy);
  }
  return kExitOk;
}

}  // namespace

void AddInitCommand(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<InitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "init", "Load or upgrade the Redis Functions library 'baton_v2' and print its version");
  cmd->add_flag("--check", args->check,
                "Only check that the loaded version is this build's (exit 4 if not)");
  cmd->add_flag("--drop-v1", args->drop_v1,
                "Delete the protocol v1 library once no v1 task is live (docs/upgrading.md)");
  cmd->add_flag("--force", args->force, "With --drop-v1: delete it even with live v1 tasks");
  cmd->callback([&ctx, args] { ctx.exit_code = RunInit(ctx, *args); });
}

}  // namespace baton::cli
