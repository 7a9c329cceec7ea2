#pragma once
// What every `baton` subcommand shares: the global options (--redis, --json), the exit codes, and
// how failures are reported (one line on stderr that says what to do, plus an {"error": ...} object
// on stdout with --json).
#include <memory>
#include <string>
#include <string_view>

#include "baton/client.h"
#include "baton/inspector.h"
#include "baton/redis_options.h"
#include "baton/status.h"
#include "broker/redis_connection.h"

namespace baton::cli {

// Exit codes (docs/cli.md "Exit codes").
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;     // failed (bad value, Redis unreachable, ...)
inline constexpr int kExitUsage = 2;     // bad command line
inline constexpr int kExitNotFound = 3;  // no such task, queue, dead task, cron job, rescue
inline constexpr int kExitConflict = 4;  // conflict, duplicate, or functions version mismatch

// kNotFound -> 3; kConflict, kAlreadyExists, kVersionMismatch -> 4; anything else -> 1.
int ExitCodeFor(const Status& status);

struct GlobalOptions {
  RedisOptions redis;  // url, timeout
  bool json = false;
};

class Context {
 public:
  GlobalOptions global;
  int exit_code = kExitOk;

  // Reports `status` (prefixed with the command name) and returns its exit code. `hint`, when not
  // empty, is a sentence saying what to do.
  int Fail(std::string_view command, const Status& status, std::string_view hint = "");
  // Reports a command-line mistake (from the parser, or one it cannot see); returns kExitUsage.
  int Usage(std::string_view command, std::string_view message);

  StatusOr<std::unique_ptr<Inspector>> OpenInspector(InspectorOptions options = {});
  StatusOr<std::unique_ptr<Client>> OpenClient();
  // A raw connection (init, cron), no version check.
  StatusOr<std::unique_ptr<internal::RedisConnection>> OpenConnection();
};

}  // namespace baton::cli
