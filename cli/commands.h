#pragma once
// Each subcommand of `baton` lives in its own file and registers itself on the app here. The
// callback of a subcommand stores its exit code in Context::exit_code.
#include <CLI/CLI.hpp>

#include "cli_context.h"

namespace baton::cli {

void AddInitCommand(CLI::App& app, Context& ctx);        // init_command.cpp
void AddEnqueueCommand(CLI::App& app, Context& ctx);     // enqueue_command.cpp
void AddTaskCommand(CLI::App& app, Context& ctx);        // task_command.cpp (show, cancel)
void AddQueuesCommand(CLI::App& app, Context& ctx);      // queues_command.cpp
void AddPendingCommand(CLI::App& app, Context& ctx);     // pending_command.cpp
void AddDlqCommand(CLI::App& app, Context& ctx);         // dlq_command.cpp
void AddCronCommand(CLI::App& app, Context& ctx);        // cron_command.cpp
void AddWorkCommand(CLI::App& app, Context& ctx);        // work_command.cpp
void AddDoctorCommand(CLI::App& app, Context& ctx);      // doctor_command.cpp
void AddRescueCommand(CLI::App& app, Context& ctx);      // rescue_command.cpp
void AddConfigCommand(CLI::App& app, Context& ctx);      // config_command.cpp (get, set)
void AddPartitionsCommand(CLI::App& app, Context& ctx);  // partitions_command.cpp

}  // namespace baton::cli
