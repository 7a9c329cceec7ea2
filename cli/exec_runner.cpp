#include "exec_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

extern char** environ;

namespace baton::cli {

namespace {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Close(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// Our environment with `extra` added (an extra NAME replaces ours).
std::vector<std::string> BuildEnvironment(const std::vector<std::string>& extra) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    vars[entry.substr(0, entry.find('='))] = entry;
  }
  for (const auto& entry : extra) vars[entry.substr(0, entry.find('='))] = entry;
  std::vector<std::string> out;
  for (auto& [name, entry] : vars) out.push_back(std::move(entry));
  return out;
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

ExecResult RunCommand(const ExecRequest& request) {
  ExecResult result;
  const Clock::time_point start = Clock::now();
  int in_pipe[2];
  int err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  Fd in_read(in_pipe[0]), in_write(in_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  Fd err_read(err_pipe[0]), err_write(err_pipe[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_read.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group (so the timeout reaches whatever the shell starts), no blocked signals
  // (worker threads block SIGTERM/SIGINT), default dispositions (we ignore SIGPIPE).
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigdefault(&attr, &defaults);

  std::vector<std::string> env = BuildEnvironment(request.env);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c", command = request.command;
  char* argv[] = {sh.data(), dash_c.data(), command.data(), nullptr};

  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    result.error = std::string("posix_spawn /bin/sh: ") + std::strerror(rc);
    return result;
  }
  result.started = true;
  in_read.Close();
  err_write.Close();
  SetNonBlocking(in_write.get());
  SetNonBlocking(err_read.get());

  std::size_t written = 0;
  if (request.stdin_data.empty()) in_write.Close();
  bool exited = false;
  int status = 0;
  Clock::time_point term_sent{};
  bool stderr_open = true;
  const std::size_t keep = request.stderr_tail_bytes;

  auto read_stderr = [&] {
    char buf[4096];
    while (stderr_open) {
      ssize_t n = ::read(err_read.get(), buf, sizeof buf);
      if (n > 0) {
        if (request.pass_stderr_through) {
          ssize_t ignored = ::write(2, buf, static_cast<std::size_t>(n));
          (void)ignored;
        }
        result.stderr_tail.append(buf, static_cast<std::size_t>(n));
        if (result.stderr_tail.size() > 2 * keep) {
          result.stderr_tail.erase(0, result.stderr_tail.size() - keep);
        }
        continue;
      }
      if (n == 0) stderr_open = false;
      break;  // EAGAIN or error
    }
  };

  while (!exited) {
    pollfd fds[2];
    nfds_t nfds = 0;
    if (stderr_open) fds[nfds++] = {err_read.get(), POLLIN, 0};
    if (in_write.get() >= 0) fds[nfds++] = {in_write.get(), POLLOUT, 0};
    ::poll(fds, nfds, 20);
    read_stderr();
    if (in_write.get() >= 0) {
      ssize_t n = ::write(in_write.get(), request.stdin_data.data() + written,
                          request.stdin_data.size() - written);
      if (n > 0) written += static_cast<std::size_t>(n);
      if (written == request.stdin_data.size() || (n < 0 && errno != EAGAIN)) in_write.Close();
    }
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    const Clock::time_point now = Clock::now();
    if (term_sent == Clock::time_point{}) {
      bool late = now >= request.deadline;
      bool cancel = request.cancelled && request.cancelled();
      if (late || cancel) {
        result.timed_out = late;
        result.cancelled = !late && cancel;
        ::kill(-pid, SIGTERM);
        term_sent = now;
      }
    } else if (!result.killed && now - term_sent >= request.kill_grace) {
      ::kill(-pid, SIGKILL);
      result.killed = true;
    }
  }
  in_write.Close();
  // Whatever the shell wrote before it exited (a background child may keep the pipe open: do not
  // wait for its end of file).
  read_stderr();
  if (result.stderr_tail.size() > keep) {
    result.stderr_tail.erase(0, result.stderr_tail.size() - keep);
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return result;
}

}  // namespace baton::cli
