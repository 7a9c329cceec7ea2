#include "exec_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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

// The keeper's signal for "the worker died" (PR_SET_PDEATHSIG). Blocked in the keeper, and taken
// with sigwaitinfo().
constexpr int kWorkerDiedSignal = SIGUSR2;

void CloseFdsFrom(int first) {
  if (::close_range(static_cast<unsigned>(first), ~0U, 0) == 0) return;
  rlimit limit{};
  int max = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
                ? static_cast<int>(limit.rlim_cur)
                : 65536;
  for (int fd = first; fd < max; ++fd) ::close(fd);
}

// Ends the keeper the way the command ended: same exit status, or death by the same signal.
[[noreturn]] void ExitLikeTheCommand(int status) {
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int s = 1; s < NSIG; ++s) {
    if (s != sig && s != SIGKILL && s != SIGSTOP) ::sigaction(s, &ignore, nullptr);  // drop pending
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(sig, &dfl, nullptr);
  rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // the command may have dumped core: we must not
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::kill(::getpid(), sig);
  ::_exit(128 + sig);
}

// The forked child: a small keeper process, leader of the command's process group, whose only
// job is to make the command die with the worker. The worker may be killed with SIGKILL (no chance
// to clean up), and the command (in its own group, so that timeouts reach whatever the shell
// starts) would then be reparented to init and keep running while its task is handed to another
// worker. The keeper has PR_SET_PDEATHSIG: when the worker (precisely: the worker thread that
// forked it, which is blocked in RunCommand until the keeper exits) dies, the kernel signals the
// keeper, which SIGKILLs the whole process group: the shell and everything it started that is
// still in the group. PR_SET_PDEATHSIG alone on the shell would not reach the shell's children
// (it is not inherited across fork). The keeper waits for the shell and exits like it; signals
// sent to the group (SIGTERM at the deadline) reach the shell, the keeper ignores them (blocked).
// Only async-signal-safe calls here: the worker is multithreaded.
[[noreturn]] void RunKeeper(pid_t worker_pid, int stdin_fd, int stderr_fd, char* const argv[],
                            char* const envp[]) {
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  struct sigaction dfl_chld {};
  dfl_chld.sa_handler = SIG_DFL;  // not SIG_IGN: that would reap the shell for us
  ::sigaction(SIGCHLD, &dfl_chld, nullptr);
  ::setpgid(0, 0);
  ::prctl(PR_SET_NAME, "baton-keeper");  // in ps (its command line stays the worker's)
  if (::prctl(PR_SET_PDEATHSIG, kWorkerDiedSignal) != 0) ::_exit(127);
  // The worker may have died before prctl(): then nobody else will ever stop the command.
  if (::getppid() != worker_pid) ::_exit(127);
  // Through fresh descriptors (>= 3, no O_CLOEXEC): a pipe end may itself be 0 or 2 when the
  // worker runs with those closed, and dup2() onto itself would keep its O_CLOEXEC.
  const int in = ::fcntl(stdin_fd, F_DUPFD, 3);
  const int err = ::fcntl(stderr_fd, F_DUPFD, 3);
  if (in < 0 || err < 0 || ::dup2(in, 0) < 0 || ::dup2(err, 2) < 0) ::_exit(127);
  // fork() copied every descriptor of the worker, including other commands' pipes (O_CLOEXEC only
  // acts at exec, and the keeper does not exec): holding them would keep another command's stdin
  // from reaching end of file.
  CloseFdsFrom(3);

  const pid_t command = ::fork();
  if (command < 0) ::_exit(127);
  if (command == 0) {
    // The shell: no blocked signals (the worker's threads block SIGTERM/SIGINT, the keeper blocks
    // all), default dispositions (the worker ignores SIGPIPE).
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve("/bin/sh", argv, envp);
    ::_exit(127);
  }
  ::close(0);
  ::close(2);
  sigset_t wanted;
  sigemptyset(&wanted);
  sigaddset(&wanted, SIGCHLD);
  sigaddset(&wanted, kWorkerDiedSignal);
  for (;;) {
    siginfo_t info;
    const int sig = ::sigwaitinfo(&wanted, &info);
    if (sig == kWorkerDiedSignal) {
      ::kill(0, SIGKILL);  // the whole group, the keeper included
      ::_exit(137);
    }
    int status = 0;
    if (sig == SIGCHLD && ::waitpid(command, &status, WNOHANG) == command) {
      ExitLikeTheCommand(status);
    }
  }
}

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

  std::vector<std::string> env = BuildEnvironment(request.env);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c", command = request.command;
  char* argv[] = {sh.data(), dash_c.data(), command.data(), nullptr};

  // Everything the keeper needs is prepared above: after fork() only async-signal-safe calls.
  const pid_t worker_pid = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) RunKeeper(worker_pid, in_read.get(), err_write.get(), argv, envp.data());
  ::setpgid(pid, pid);  // also done by the keeper: whichever runs first (kill(-pid) needs it)
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
