#include "exec_runner.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <thread>

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

}  // namespace
}  // namespace baton::cli
