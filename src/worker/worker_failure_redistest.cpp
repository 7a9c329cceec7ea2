// The worker's failure paths against a real redis-server: dead-lettering with the error history,
// non-retryable failures, exceptions, execution_timeout, a hung handler taken over by another
// worker, Start/Register refusals, and what the worker logs (only through the application's
// Logger).
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "baton/logger.h"
#include "broker/functions.h"
#include "worker/worker_test_util.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;

TEST_F(WorkerTest, DeadLettersAfterOnePlusMaxRetryAttemptsWithEveryError) {
  Worker worker(Options());
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "doomed",
                      [](TaskContext& ctx) {
                        return Status::Internal("attempt " + std::to_string(ctx.attempt()) +
                                                " failed");
                      },
                      FastRetry())
                  .ok());
  ASSERT_TRUE(worker.Start().ok());
  EnqueueOptions opts;
  opts.max_retry = 2;
  std::string id = Enqueue("doomed", {{"k", "v"}}, opts);
  ASSERT_TRUE(WaitUntil([&] { return IsDead("doomed", id); }));
  nlohmann::json errors = Errors(id);
  ASSERT_EQ(errors.size(), 3u) << errors.dump();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(errors[i]["attempt"], i + 1);
    EXPECT_EQ(errors[i]["kind"], "error");
    EXPECT_NE(
        errors[i]["error"].get<std::string>().find("attempt " + std::to_string(i + 1) + " failed"),
        std::string::npos)
        << errors[i].dump();
    EXPECT_NE(errors[i]["stack"].get<std::string>().find("#0 "), std::string::npos);
    EXPECT_EQ(errors[i]["worker"], worker.consumer_name());
  }
  ASSERT_TRUE(WaitUntil([&] { return worker.stats().dead == 1; }));
  EXPECT_EQ(worker.stats().failed, 3u);
  EXPECT_EQ(worker.stats().succeeded, 0u);
  EXPECT_FALSE(IsDone(id));
  EXPECT_EQ(Pending("doomed"), 0);
}

TEST_F(WorkerTest, NonRetryableFailuresGoDeadAtOnce) {
  std::atomic<int> runs{0};
  Worker worker(Options());
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "nr",
                      [&](TaskContext& ctx) -> Status {
                        ++runs;
                        if (ctx.task().Payload().value("throw", false)) {
                          throw NonRetryableError("card declined");
                        }
                        return NonRetryable("bad address");
                      },
                      FastRetry())
                  .ok());
  ASSERT_TRUE(worker.Start().ok());
  std::string thrown = Enqueue("nr", {{"throw", true}});
  std::string returned = Enqueue("nr", {{"throw", false}});
  ASSERT_TRUE(WaitUntil([&] { return IsDead("nr", thrown) && IsDead("nr", returned); }));
  EXPECT_EQ(runs, 2);
  nlohmann::json e1 = Errors(thrown);
  ASSERT_EQ(e1.size(), 1u);
  EXPECT_EQ(e1[0]["kind"], "non_retryable");
  EXPECT_EQ(e1[0]["error"], "baton::NonRetryableError: card declined");
  nlohmann::json e2 = Errors(returned);
  ASSERT_EQ(e2.size(), 1u);
  EXPECT_EQ(e2[0]["kind"], "non_retryable");
  EXPECT_NE(e2[0]["error"].get<std::string>().find("bad address"), std::string::npos);
}

TEST_F(WorkerTest, ExceptionTypeMessageAndStackAreRecorded) {
  Worker worker(Options());
  ASSERT_TRUE(
      worker
          .Register(
              kNs, "throws",
              [](TaskContext&) -> Status { throw std::out_of_range("index 7 past the end"); },
              FastRetry())
          .ok());
  ASSERT_TRUE(worker.Start().ok());
  EnqueueOptions opts;
  opts.max_retry = 0;
  std::string id = Enqueue("throws", {}, opts);
  ASSERT_TRUE(WaitUntil([&] { return IsDead("throws", id); }));
  nlohmann::json errors = Errors(id);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]["kind"], "error");
  EXPECT_EQ(errors[0]["error"], "std::out_of_range: index 7 past the end");
  // The stack starts at the throw, in this file (the handler's lambda), with file:line since the
  // tests have debug info; the worker's own frames (the same for every failure) are left out.
  std::string stack = errors[0]["stack"];
  EXPECT_EQ(stack.rfind("exception std::out_of_range: index 7 past the end\nthrown at:\n  #0 ", 0),
            0u)
      << stack;
  EXPECT_NE(stack.find("worker_failure_redistest.cpp:"), std::string::npos) << stack;
  EXPECT_EQ(stack.find("baton::internal::TypeRunner::HandlerLoop"), std::string::npos) << stack;
}

TEST_F(WorkerTest, AttemptPastExecutionTimeoutFailsAsTimeout) {
  std::atomic<bool> saw_cancel{false};
  Worker worker(Options());
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "slow",
                      [&](TaskContext& ctx) {
                        while (!ctx.cancelled()) std::this_thread::sleep_for(5ms);
                        saw_cancel = true;
                        return Status::Ok();  // too late: still a timeout
                      },
                      FastRetry())
                  .ok());
  ASSERT_TRUE(worker.Start().ok());
  EnqueueOptions opts;
  opts.max_retry = 0;
  opts.execution_timeout = 1;
  auto t0 = std::chrono::steady_clock::now();
  std::string id = Enqueue("slow", {}, opts);
  ASSERT_TRUE(WaitUntil([&] { return IsDead("slow", id); }, 5s));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_TRUE(saw_cancel);
  nlohmann::json errors = Errors(id);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]["kind"], "timeout");
  EXPECT_EQ(errors[0]["error"], "execution_timeout of 1s exceeded");
}

TEST_F(WorkerTest, HungHandlerPastItsDeadlineIsTakenOverByAnotherWorker) {
  // Worker A's handler ignores cancellation. After the deadline A stops heartbeating, the lease
  // (1 s) ends, the maintenance takes the task back, and worker B runs it to completion.
  std::atomic<bool> release{false};
  std::atomic<bool> a_started{false};
  WorkerOptions oa = Options();
  Worker a(oa);
  ASSERT_TRUE(a.Register(
                   kNs, "hang",
                   [&](TaskContext&) {
                     a_started = true;
                     while (!release) std::this_thread::sleep_for(5ms);
                     return Status::Ok();
                   },
                   FastRetry(1, 1000))
                  .ok());
  ASSERT_TRUE(a.Start().ok());
  EnqueueOptions opts;
  opts.execution_timeout = 1;
  std::string id = Enqueue("hang", {}, opts);
  ASSERT_TRUE(WaitUntil([&] { return a_started.load(); }));

  std::atomic<int> b_runs{0};
  Worker b(oa);
  ASSERT_TRUE(b.Register(
                   kNs, "hang",
                   [&](TaskContext&) {
                     ++b_runs;
                     return Status::Ok();
                   },
                   FastRetry(1, 1000))
                  .ok());
  ASSERT_TRUE(b.Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return IsDone(id); }, 8s));
  EXPECT_EQ(b_runs, 1);
  std::optional<Finish> finish = DoneBy(id);
  ASSERT_TRUE(finish.has_value());
  EXPECT_EQ(finish->worker, b.consumer_name());
  EXPECT_EQ(finish->attempts, 2);
  // The first attempt ended with its lease (the events say so; the error history went with the
  // success).
  bool lease_expired = false;
  for (const auto& e : Events()) {
    if (e.at("from") == "active" && e.at("to") == "retry" && e.at("ids") == id) {
      lease_expired = e.at("error").find("lease expired") != std::string::npos;
    }
  }
  EXPECT_TRUE(lease_expired);
  // A's hung handler finally returns: its timeout failure is stale, the task stays done.
  release = true;
  a.Stop();
  b.Stop();
  EXPECT_TRUE(IsDone(id));
  EXPECT_FALSE(IsDead("hang", id));
}

TEST_F(WorkerTest, StartFailsWithoutTheFunctionsLibrary) {
  redis_.Command({"FUNCTION", "FLUSH"});
  Worker worker(Options());
  ASSERT_TRUE(worker.Register(kNs, "t", [](TaskContext&) { return Status::Ok(); }).ok());
  Status st = worker.Start();
  EXPECT_EQ(st.code(), StatusCode::kVersionMismatch) << st.ToString();
  EXPECT_NE(st.message().find("baton init"), std::string::npos) << st.ToString();
}

TEST_F(WorkerTest, KeepsRunningWhileTheFunctionsLibraryIsReloaded) {
  std::atomic<int> runs{0};
  Worker worker(Options());
  ASSERT_TRUE(worker.Register(kNs, "t", CountRuns(&runs)).ok());
  ASSERT_TRUE(worker.Start().ok());
  std::string before = Enqueue("t", {});
  ASSERT_TRUE(WaitUntil([&] { return IsDone(before); }));
  redis_.Command({"FUNCTION", "FLUSH"});  // every FCALL now fails: the worker backs off
  std::this_thread::sleep_for(400ms);
  redis_.LoadFunctions();
  std::string after = Enqueue("t", {});
  ASSERT_TRUE(WaitUntil([&] { return IsDone(after); }));
  EXPECT_EQ(runs, 2);
}

// Keeps every line the worker logs (thread-safe).
class CapturingLogger : public Logger {
 public:
  void Log(LogLevel level, std::string_view message, const std::vector<LogField>& fields) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string line = std::string(LogLevelName(level)) + " " + std::string(message);
    for (const LogField& f : fields) line += " " + f.key + "=" + f.value;
    lines_.push_back(line);
  }
  std::vector<std::string> Lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  int Count(const std::string& text) {
    int n = 0;
    for (const std::string& l : Lines()) n += l.find(text) != std::string::npos ? 1 : 0;
    return n;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

TEST_F(WorkerTest, LogsAnOutageOnceWhenItStartsAndOnceWhenItEndsThroughTheApplicationsLogger) {
  auto logger = std::make_shared<CapturingLogger>();
  WorkerOptions o = Options();
  o.maintenance = false;
  o.logger = logger;
  Worker worker(o);
  std::atomic<int> runs{0};
  ASSERT_TRUE(worker.Register(kNs, "t", CountRuns(&runs)).ok());
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(worker.Start().ok());
  // Every call of the functions now fails. A task written as baton_v2_enqueue writes one (its
  // entry and its record) is still read (a plain XREADGROUP) and run, but its baton_v2_start and
  // its ack are refused and sent again with a backoff, and nothing more is read meanwhile.
  redis_.Command({"FUNCTION", "FLUSH"});
  const std::string before = "0190f0a0-0000-7000-8000-000000000001";
  ASSERT_FALSE(AddQueuedByHand("t", before, "{}").empty());
  ASSERT_TRUE(WaitUntil([&] { return runs == 1; }));
  std::this_thread::sleep_for(1500ms);
  EXPECT_FALSE(IsDone(before));
  redis_.LoadFunctions();
  ASSERT_TRUE(WaitUntil([&] { return IsDone(before); }));  // the ack waited: nothing was lost
  std::string after = Enqueue("t", {});
  ASSERT_TRUE(WaitUntil([&] { return IsDone(after); }));
  worker.Stop();
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(worker.stats().succeeded, 2u);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "") << "the library wrote to stderr by itself";
  EXPECT_EQ(logger->Count("warn worker calls failed, retrying"), 1)
      << ::testing::PrintToString(logger->Lines());
  EXPECT_EQ(logger->Count("info worker calls recovered"), 1)
      << ::testing::PrintToString(logger->Lines());
  EXPECT_EQ(logger->Count("ns=wt type=t"), 2) << ::testing::PrintToString(logger->Lines());
  EXPECT_EQ(logger->Count("Function not found"), 1) << ::testing::PrintToString(logger->Lines());
  EXPECT_EQ(logger->Count("run 'baton init'"), 1) << ::testing::PrintToString(logger->Lines());
}

TEST_F(WorkerTest, StopReturnsWhileItsCallsAreRefused) {
  // A task read while the functions library is gone: its baton_v2_start and its ack are refused
  // again and again. Stop still returns once the grace is over, and the task is left to its
  // lease (still pending in the group), neither lost nor acked.
  WorkerOptions o = Options();
  o.maintenance = false;
  o.shutdown_grace = 300ms;
  Worker worker(o);
  std::atomic<int> runs{0};
  ASSERT_TRUE(worker.Register(kNs, "t", CountRuns(&runs)).ok());
  ASSERT_TRUE(worker.Start().ok());
  redis_.Command({"FUNCTION", "FLUSH"});
  const std::string id = "0190f0a0-0000-7000-8000-000000000002";
  ASSERT_FALSE(AddQueuedByHand("t", id, "{}").empty());
  ASSERT_TRUE(WaitUntil([&] { return runs == 1; }));
  const auto t0 = std::chrono::steady_clock::now();
  worker.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(Pending("t"), 1);
  redis_.LoadFunctions();
  EXPECT_FALSE(IsDone(id));
}

TEST_F(WorkerTest, WithoutALoggerNothingIsWrittenToStderr) {
  WorkerOptions o = Options();
  Worker worker(o);
  ASSERT_TRUE(worker.Register(kNs, "t", [](TaskContext&) { return Status::Ok(); }).ok());
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(worker.Start().ok());
  redis_.Command({"FUNCTION", "FLUSH"});
  std::this_thread::sleep_for(500ms);
  redis_.LoadFunctions();
  std::string after = Enqueue("t", {});
  ASSERT_TRUE(WaitUntil([&] { return IsDone(after); }));
  worker.Stop();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST_F(WorkerTest, StartFailsWhenRedisIsUnreachable) {
  WorkerOptions o = Options();
  o.redis.url = "redis://127.0.0.1:" + std::to_string(FreeLoopbackPort());
  Worker worker(o);
  ASSERT_TRUE(worker.Register(kNs, "t", [](TaskContext&) { return Status::Ok(); }).ok());
  EXPECT_EQ(worker.Start().code(), StatusCode::kUnavailable);
}

TEST_F(WorkerTest, RegisterRefusesBadInput) {
  Worker worker(Options());
  auto ok = [](TaskContext&) { return Status::Ok(); };
  EXPECT_EQ(worker.Register("bad ns", "t", ok).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(worker.Register(kNs, "a|b", ok).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(worker.Register(kNs, "t", nullptr).code(), StatusCode::kInvalidArgument);
  TypeOptions negative;
  negative.concurrency = -1;
  EXPECT_EQ(worker.Register(kNs, "t", ok, negative).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(worker.Register(kNs, "t", ok).ok());
  EXPECT_EQ(worker.Register(kNs, "t", ok).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(Worker(Options()).Start().code(), StatusCode::kInvalidArgument);  // no handler
  ASSERT_TRUE(worker.Start().ok());
  EXPECT_EQ(worker.Register(kNs, "u", ok).code(), StatusCode::kConflict);
  EXPECT_EQ(worker.Start().code(), StatusCode::kConflict);
}

TEST_F(WorkerTest, LostLeaseCancelsTheRunningAttempt) {
  // The worker's lease ends without a heartbeat reaching Redis (as after a network partition) and
  // a reaper takes the task back: the next heartbeat finds the SID gone and cancels the attempt.
  std::atomic<bool> running{false};
  std::atomic<bool> saw_cancel{false};
  std::atomic<bool> release{false};
  WorkerOptions o = Options();
  o.maintenance = false;  // the test is the reaper
  Worker worker(o);
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "stolen",
                      [&](TaskContext& ctx) {
                        running = true;
                        for (int i = 0; i < 1000 && !ctx.cancelled(); ++i) {
                          std::this_thread::sleep_for(5ms);
                        }
                        saw_cancel = ctx.cancelled();
                        // Returns once the test has read the error history: the success it
                        // reports then is a stale ack, which records the task as done and
                        // clears that history.
                        for (int i = 0; i < 1000 && !release; ++i) {
                          std::this_thread::sleep_for(5ms);
                        }
                        return Status::Ok();
                      },
                      FastRetry(0, 1500))
                  .ok());
  ASSERT_TRUE(worker.Start().ok());
  std::string id = Enqueue("stolen", {});
  ASSERT_TRUE(WaitUntil([&] { return running.load(); }));
  // The worker's entry in its group: who holds it, at which SID.
  const std::string record = redis_.String({"HGET", keys().Tasks(), id});
  const std::string sid = record.substr(record.rfind('|') + 1);
  auto pending = redis_.Command({"XPENDING", keys().Stream("stolen"), "baton", sid, sid, "1"});
  ASSERT_EQ(pending->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(pending->elements, 1u) << record;
  const std::string holder = pending->element[0]->element[1]->str;
  EXPECT_EQ(holder, worker.consumer_name());
  // Ends the lease (the entry's delivery time moved an hour back, as if no heartbeat had reached
  // Redis since) and reclaims in one transaction, so no heartbeat can come in between.
  ASSERT_EQ(redis_.Command({"MULTI"})->type, REDIS_REPLY_STATUS);
  redis_.Command(
      {"XCLAIM", keys().Stream("stolen"), "baton", holder, "0", sid, "IDLE", "3600000", "JUSTID"});
  redis_.Command(internal::fn::Reclaim(kNs, "stolen", 10, 50, 200, 7, "test-reaper"));
  auto exec = redis_.Command({"EXEC"});
  ASSERT_EQ(exec->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(exec->elements, 2u);
  ASSERT_EQ(exec->element[0]->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(exec->element[0]->elements, 1u);  // the entry was still held, now idle for an hour
  ASSERT_EQ(exec->element[1]->type, REDIS_REPLY_ARRAY);
  EXPECT_EQ(exec->element[1]->element[0]->integer, 1);  // reclaimed
  ASSERT_TRUE(WaitUntil([&] { return saw_cancel.load(); }, 3s));
  nlohmann::json errors = Errors(id);
  release = true;
  ASSERT_EQ(errors.size(), 1u) << errors.dump();
  EXPECT_EQ(errors[0]["kind"], "lease_expired");
  EXPECT_EQ(errors[0]["worker"], worker.consumer_name());
  worker.Stop();
}

}  // namespace
}  // namespace baton::testing
