#include "exec_runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace baton::cli {
namespace {

using namespace std::chrono_literals;

ExecRequest Quiet(std::string command) {
  ExecRequest r;
  r.command = std::move(command);
  r.pass_stderr_through = false;
  return r;
}

class ExecRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override { ::signal(SIGPIPE, SIG_IGN); }
};

TEST_F(ExecRunnerTest, PassesStdinAndEnvironmentAndReportsExitStatus) {
  ExecRequest r = Quiet("read line; echo \"$line/$BATON_X\" >&2; exit 3");
  r.stdin_data = "{\"a\":1}\n";
  r.env = {"BATON_X=hello"};
  ExecResult result = RunCommand(r);
  ASSERT_TRUE(result.started) << result.error;
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.signal, 0);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.stderr_tail, "{\"a\":1}/hello\n");
}

TEST_F(ExecRunnerTest, KeepsOnlyTheTailOfStderr) {
  ExecRequest r = Quiet("i=0; while [ $i -lt 2000 ]; do echo line$i >&2; i=$((i+1)); done; exit 1");
  r.stderr_tail_bytes = 64;
  ExecResult result = RunCommand(r);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.stderr_tail.size(), 64u);
  EXPECT_NE(result.stderr_tail.find("line1999\n"), std::string::npos);
}

TEST_F(ExecRunnerTest, AChildThatIgnoresStdinStillFinishes) {
  ExecRequest r = Quiet("exit 0");
  r.stdin_data = std::string(1 << 20, 'x');  // far more than a pipe buffer
  ExecResult result = RunCommand(r);
  EXPECT_EQ(result.exit_code, 0);
}

TEST_F(ExecRunnerTest, DeadlineSendsSigtermToTheProcessGroup) {
  ExecRequest r = Quiet("sleep 30 & wait");
  r.deadline = std::chrono::steady_clock::now() + 200ms;
  ExecResult result = RunCommand(r);
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.signal, SIGTERM);
  EXPECT_FALSE(result.killed);
  EXPECT_LT(result.elapsed, 10s);
}

TEST_F(ExecRunnerTest, SigkillAfterTheGraceWhenSigtermIsIgnored) {
  ExecRequest r = Quiet("trap '' TERM; while true; do sleep 0.05; done");
  r.deadline = std::chrono::steady_clock::now() + 200ms;
  r.kill_grace = 300ms;
  ExecResult result = RunCommand(r);
  EXPECT_TRUE(result.timed_out);
  EXPECT_TRUE(result.killed);
  EXPECT_EQ(result.signal, SIGKILL);
}

TEST_F(ExecRunnerTest, CancellationStopsTheChild) {
  std::atomic<bool> cancel{false};
  ExecRequest r = Quiet("sleep 30");
  r.cancelled = [&cancel] { return cancel.load(); };
  std::thread canceller([&cancel] {
    std::this_thread::sleep_for(200ms);
    cancel = true;
  });
  ExecResult result = RunCommand(r);
  canceller.join();
  EXPECT_TRUE(result.cancelled);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.signal, SIGTERM);
}

TEST_F(ExecRunnerTest, ChildSeesUnblockedSigtermEvenIfTheCallerBlocksIt) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  ExecRequest r = Quiet("sleep 30");
  r.deadline = std::chrono::steady_clock::now() + 200ms;
  r.kill_grace = 20s;
  ExecResult result = RunCommand(r);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(result.signal, SIGTERM);
  EXPECT_FALSE(result.killed);
}

// Each command reads its stdin to the end: no other command's process may hold its pipe open.
TEST_F(ExecRunnerTest, ConcurrentCommandsEachSeeTheEndOfTheirStdin) {
  std::vector<std::thread> threads;
  std::atomic<int> finished{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&finished, i] {
      ExecRequest r = Quiet("wc -c >&2");
      r.stdin_data = std::string(1000 + i, 'x');
      r.deadline = std::chrono::steady_clock::now() + 10s;
      ExecResult result = RunCommand(r);
      EXPECT_FALSE(result.timed_out);
      EXPECT_EQ(result.exit_code, 0);
      EXPECT_EQ(std::stoi(result.stderr_tail), 1000 + i);
      ++finished;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(finished, 8);
}

// True while `pid` exists and is not a zombie (an orphan's zombie waits for init to reap it).
bool Running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  if (text.empty()) return false;
  std::size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

// `baton work` killed with SIGKILL must not leave its command running (the task goes to another
// worker: it would run twice at once), nor what the command started.
TEST_F(ExecRunnerTest, TheCommandAndItsChildrenDieWhenTheWorkerIsKilled) {
  char dir_template[] = "/tmp/exec_runner_test.XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string pids_file = std::string(dir_template) + "/pids";
  const pid_t worker = ::fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {
    // The shell and a child of it (a grandchild of the worker), both sleeping.
    ExecRequest r = Quiet("sleep 30 & echo $$ $! > " + pids_file + ".tmp; mv " + pids_file +
                          ".tmp " + pids_file + "; wait");
    RunCommand(r);
    ::_exit(0);
  }
  std::vector<pid_t> pids;
  for (int i = 0; i < 500 && pids.empty(); ++i) {
    std::ifstream in(pids_file);
    pid_t pid;
    while (in >> pid) pids.push_back(pid);
    if (pids.empty()) std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(pids.size(), 2u);
  for (pid_t pid : pids) ASSERT_TRUE(Running(pid)) << pid;

  ASSERT_EQ(::kill(worker, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(worker, &status, 0), worker);
  for (pid_t pid : pids) {
    const auto give_up = std::chrono::steady_clock::now() + 2s;
    while (Running(pid) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(10ms);
    }
    EXPECT_FALSE(Running(pid)) << "pid " << pid << " outlived the worker";
    if (Running(pid)) ::kill(pid, SIGKILL);
  }
  std::filesystem::remove_all(dir_template);
}

}  // namespace
}  // namespace baton::cli
