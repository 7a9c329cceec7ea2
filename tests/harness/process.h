#pragma once
// A child process for tests: spawned with argv, optionally with stdout/stderr to a file, killed
// (SIGKILL) when the object dies unless it already exited.
#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace baton::testing {

class Process {
 public:
  // Starts argv[0] (looked up in PATH when it has no slash). `log_path`, when not empty, receives
  // stdout and stderr. `env` entries are added to the child's environment.
  Process(std::vector<std::string> argv, std::string log_path = "",
          std::map<std::string, std::string> env = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool Running();
  void Signal(int sig);
  // Waits for exit; returns the exit status (or 128+signal), nullopt on timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  void Kill();  // SIGKILL and reap.

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// A fresh empty temporary directory, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreeLoopbackPort();

// The whole content of a file ("" when it cannot be read), e.g. a child's captured output.
std::string ReadFile(const std::string& path);

}  // namespace baton::testing
