// baton-console: the web console (docs/console.md).
#include <spdlog/spdlog.h>

#include <iostream>

#include "console_config.h"
#include "console_server.h"
#include "core/stop_signals.h"

int main(int argc, char** argv) {
  auto parsed = baton::console::ParseConsoleCommandLine(argc, argv);
  if (!parsed.config) return parsed.exit_code;
  spdlog::set_level(spdlog::level::from_str(parsed.config->log_level));
  spdlog::flush_on(spdlog::level::trace);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ baton-console: %v");

  baton::internal::StopSignals stop_signals;  // before any thread starts
  auto server = baton::console::ConsoleServer::Create(*parsed.config);
  if (!server.ok()) {
    spdlog::critical("{}", server.status().message());
    return server.status().code() == baton::StatusCode::kInvalidArgument ? 2 : 1;
  }
  if (baton::Status started = (*server)->Start(); !started.ok()) {
    spdlog::critical("{}", started.message());
    return 1;
  }
  const std::string& listen = parsed.config->listen;
  const std::string host = listen.substr(0, listen.rfind(':'));
  std::cout << "baton-console listening on http://" << host << ":" << (*server)->port()
            << std::endl;
  spdlog::info("serving the front end, read-only: {}", parsed.config->read_only);
  stop_signals.Wait();
  spdlog::info("signal received, stopping");
  (*server)->Stop();
  return 0;
}
