// baton config get|set: the settings of one namespace (baton_v2_configure), kept in Redis so that
// every client, worker and daemon of every language applies the same ones: events_maxlen,
// done_retention_s, dlq_max, dlq_retention_s, lease_ms.
#include <iostream>

#include "broker/protocol_gen.h"
#include "commands.h"
#include "output.h"

namespace baton::cli {

namespace {

struct ConfigArgs {
  std::string ns;
  std::vector<std::string> pairs;  // set: setting, value, setting, value, ...
};

struct SettingRow {
  const char* name;
  std::int64_t value;
  std::int64_t default_value;
  const char* meaning;
};

std::vector<SettingRow> Rows(const NamespaceSettings& s) {
  namespace p = internal::protocol;
  return {
      {"events_maxlen", s.events_maxlen, p::kDefaultEventsMaxlen,
       "events entries kept (0 = no events)"},
      {"done_retention_s", s.done_retention_s, p::kDefaultDoneRetentionS,
       "seconds a finished id stays a duplicate"},
      {"dlq_max", s.dlq_max, p::kDefaultDlqMax, "dead tasks kept per type (oldest dropped)"},
      {"dlq_retention_s", s.dlq_retention_s, p::kDefaultDlqRetentionS,
       "seconds a dead task is kept"},
      {"lease_ms", s.lease_ms, p::kDefaultLeaseMs, "lease of a task whose worker asks for none"},
  };
}

void Print(Context& ctx, const std::string& ns, const NamespaceSettings& settings) {
  if (ctx.global.json) {
    nlohmann::json values = nlohmann::json::object();
    nlohmann::json defaults = nlohmann::json::object();
    for (const SettingRow& row : Rows(settings)) {
      values[row.name] = row.value;
      defaults[row.name] = row.default_value;
    }
    PrintJson({{"namespace", ns}, {"settings", values}, {"defaults", defaults}});
    return;
  }
  std::cout << "namespace " << ns << "\n";
  Table table({"  SETTING", "VALUE", "DEFAULT", "MEANING"});
  for (const SettingRow& row : Rows(settings)) {
    table.Add({"  " + std::string(row.name), std::to_string(row.value),
               row.value == row.default_value ? "(default)" : std::to_string(row.default_value),
               row.meaning});
  }
  table.Print(std::cout);
}

int Run(Context& ctx, const ConfigArgs& args, bool set) {
  const char* command = set ? "config set" : "config get";
  std::vector<std::pair<std::string, std::string>> changes;
  if (set) {
    if (args.pairs.empty() || args.pairs.size() % 2 != 0) {
      return ctx.Usage(command, "give SETTING VALUE pairs (VALUE '' = back to the default)");
    }
    for (std::size_t i = 0; i < args.pairs.size(); i += 2) {
      changes.emplace_back(args.pairs[i], args.pairs[i + 1]);
    }
  }
  auto client = ctx.OpenClient();
  if (!client.ok()) return ctx.Fail(command, client.status());
  auto settings = (*client)->ConfigureNamespace(args.ns, changes);
  if (!settings.ok()) {
    std::string hint;
    if (settings.status().code() == StatusCode::kInvalidArgument) {
      hint = "Nothing was changed. See 'baton config get " + args.ns +
             "' for the settings and docs/cli.md for their ranges.";
    }
    return ctx.Fail(command, settings.status(), hint);
  }
  Print(ctx, args.ns, *settings);
  return kExitOk;
}

}  // namespace

void AddConfigCommand(CLI::App& app, Context& ctx) {
  CLI::App* config = app.add_subcommand("config", "Show or change the settings of a namespace");
  config->require_subcommand(1);

  auto get_args = std::make_shared<ConfigArgs>();
  CLI::App* get = config->add_subcommand("get", "Every setting of the namespace, in effect now");
  get->add_option("ns", get_args->ns, "Namespace")->required();
  get->callback([&ctx, get_args] { ctx.exit_code = Run(ctx, *get_args, false); });

  auto set_args = std::make_shared<ConfigArgs>();
  CLI::App* set = config->add_subcommand(
      "set", "Change settings (all or nothing) and print them: baton config set NS KEY VALUE...");
  set->add_option("ns", set_args->ns, "Namespace")->required();
  set->add_option("pairs", set_args->pairs, "SETTING VALUE pairs; VALUE '' = the default")
      ->required();
  set->footer(
      "Settings: events_maxlen (0..100000000), done_retention_s (1..31536000), dlq_max "
      "(1..100000000), dlq_retention_s (1..315360000), lease_ms (1000..86400000).");
  set->callback([&ctx, set_args] { ctx.exit_code = Run(ctx, *set_args, true); });
}

}  // namespace baton::cli
