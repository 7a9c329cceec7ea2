#include "worker/stack_trace.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "baton/worker.h"
#include "worker/attempt.h"

namespace baton::internal {

// Not inlined and with external linkage, so the frame carries a name in the dynamic symbol table.
__attribute__((noinline)) std::string CaptureFromNamedFunction() { return CaptureStackTrace(); }

namespace {

TEST(StackTraceTest, NamesTheCallersDemangled) {
  std::string trace = CaptureFromNamedFunction();
  EXPECT_NE(trace.find("#0 "), std::string::npos) << trace;
  EXPECT_NE(trace.find("baton::internal::CaptureFromNamedFunction"), std::string::npos) << trace;
  EXPECT_EQ(trace.find("CaptureStackTrace"), std::string::npos) << trace;  // itself never shown
}

TEST(StackTraceTest, DemangleLeavesPlainNamesAlone) {
  EXPECT_EQ(Demangle("_ZN5baton6WorkerD1Ev"), "baton::Worker::~Worker()");
  EXPECT_EQ(Demangle("main"), "main");
}

TEST(StackTraceTest, CurrentExceptionTypeIsTheDynamicType) {
  EXPECT_EQ(CurrentExceptionTypeName(), "unknown");
  try {
    throw std::out_of_range("x");
  } catch (const std::exception&) {
    EXPECT_EQ(CurrentExceptionTypeName(), "std::out_of_range");
  }
}

Task MakeTask() {
  Task t;
  t.task_id = "t1";
  t.ns = "ns";
  t.task_type = "type";
  return t;
}

AttemptOutcome RunWith(Handler handler) {
  Task task = MakeTask();
  std::atomic<bool> cancel{false};
  TaskContext ctx(&task, 1, "1-0", &cancel, std::chrono::steady_clock::time_point::max());
  return RunAttempt(handler, ctx);
}

TEST(AttemptTest, ClassifiesOutcomes) {
  EXPECT_EQ(RunWith([](TaskContext&) { return Status::Ok(); }).failure, FailureKind::kNone);

  AttemptOutcome error = RunWith([](TaskContext&) { return Status::Internal("db down"); });
  EXPECT_EQ(error.failure, FailureKind::kError);
  EXPECT_NE(error.message.find("db down"), std::string::npos);
  EXPECT_FALSE(error.stack.empty());

  AttemptOutcome nr = RunWith([](TaskContext&) { return NonRetryable("bad email"); });
  EXPECT_EQ(nr.failure, FailureKind::kNonRetryable);
  EXPECT_NE(nr.message.find("bad email"), std::string::npos);

  AttemptOutcome thrown = RunWith([](TaskContext&) -> Status { throw std::logic_error("boom"); });
  EXPECT_EQ(thrown.failure, FailureKind::kError);
  EXPECT_EQ(thrown.message, "std::logic_error: boom");
  EXPECT_NE(thrown.stack.find("#0 baton::internal::OutcomeOfCurrentException"), std::string::npos)
      << thrown.stack;

  AttemptOutcome nre =
      RunWith([](TaskContext&) -> Status { throw NonRetryableError("never works"); });
  EXPECT_EQ(nre.failure, FailureKind::kNonRetryable);
  EXPECT_EQ(nre.message, "baton::NonRetryableError: never works");

  AttemptOutcome odd = RunWith([](TaskContext&) -> Status { throw 42; });
  EXPECT_EQ(odd.failure, FailureKind::kError);
  EXPECT_EQ(odd.message, "int: (not a std::exception)");

  AttemptOutcome timeout = TimeoutOutcome(3);
  EXPECT_EQ(timeout.failure, FailureKind::kTimeout);
  EXPECT_EQ(timeout.message, "execution_timeout of 3s exceeded");
  EXPECT_EQ(FailureKindName(FailureKind::kMalformed), "malformed");
}

}  // namespace
}  // namespace baton::internal
