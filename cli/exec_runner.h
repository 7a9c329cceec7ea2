#pragma once
// Runs one shell command as a child process for `baton work --exec`: `/bin/sh -c CMD` in its own
// process group, with `stdin_data` on its stdin, extra environment variables, its stdout shared
// with ours, and its stderr both passed through to ours and kept (the last `stderr_tail_bytes`) for
// the error record. At the deadline, or when `cancelled()` turns true, the whole process group gets
// SIGTERM, then SIGKILL after `kill_grace`. The command dies with the worker: if the calling
// process dies (even by SIGKILL) while the command runs, the command's whole process group gets
// SIGKILL (a small keeper process, the group's leader, sees the death through PR_SET_PDEATHSIG;
// see RunKeeper in exec_runner.cpp). Not covered: processes that left the group (setsid, setpgid)
// and anything still running after the command itself has exited (background children).
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace baton::cli {

struct ExecRequest {
  std::string command;
  std::string stdin_data;
  std::vector<std::string> env;  // "NAME=value", added to (or replacing in) our environment
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::function<bool()> cancelled;  // polled every few ms; may be empty
  std::chrono::milliseconds kill_grace{5000};
  std::size_t stderr_tail_bytes = 4096;
  bool pass_stderr_through = true;
};

struct ExecResult {
  bool started = false;  // false: the process could not be spawned (see `error`)
  std::string error;
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  bool timed_out = false;
  bool cancelled = false;
  bool killed = false;  // needed SIGKILL after the grace
  std::string stderr_tail;
  std::chrono::milliseconds elapsed{0};
};

// Blocks until the child exits. Thread-safe (each call has its own child). The caller should
// ignore SIGPIPE (a child that does not read its stdin closes the pipe).
ExecResult RunCommand(const ExecRequest& request);

}  // namespace baton::cli
