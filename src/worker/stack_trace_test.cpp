#include "worker/stack_trace.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "baton/worker.h"
#include "worker/attempt.h"
#include "worker/failure_site.h"

namespace baton::internal {

// Not inlined, so each is a frame of its own with a name.
__attribute__((noinline)) std::string CaptureFromNamedFunction() { return CaptureStackTrace(); }

__attribute__((noinline)) void ChargeCard(int cents) {
  if (cents > 0) throw std::runtime_error("card declined");  // the throw line the tests look for
}

__attribute__((noinline)) Status LookUpCustomer(int id) {
  if (id > 0) return Status::NotFound("customer " + std::to_string(id));
  return Status::Ok();
}

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
  EXPECT_EQ(nr.message, "non_retryable: bad email");
  // Only the explicit choice skips the retries: an invalid_argument passed up from elsewhere (here
  // a contract check of another task) is an ordinary, retried failure.
  AttemptOutcome invalid = RunWith([](TaskContext&) {
    return Status::InvalidArgument("max_retry", "must be an integer 0..25");
  });
  EXPECT_EQ(invalid.failure, FailureKind::kError);
  EXPECT_NE(nr.message.find("bad email"), std::string::npos);

  AttemptOutcome thrown = RunWith([](TaskContext&) -> Status { throw std::logic_error("boom"); });
  EXPECT_EQ(thrown.failure, FailureKind::kError);
  EXPECT_EQ(thrown.message, "std::logic_error: boom");
  EXPECT_EQ(thrown.stack.rfind("exception std::logic_error: boom\nthrown at:\n  #0 ", 0), 0u)
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

// Where a failure was made, not where the worker noticed it (worker/failure_site.h).
TEST(FailureSiteTest, AnExceptionsStackStartsAtItsThrow) {
  AttemptOutcome out = RunWith([](TaskContext&) -> Status {
    ChargeCard(500);
    return Status::Ok();
  });
  ASSERT_EQ(out.failure, FailureKind::kError);
  EXPECT_EQ(out.message, "std::runtime_error: card declined");
  // #0 is ChargeCard at the line of its throw, #1 the handler; the worker's frames are cut.
  EXPECT_EQ(out.stack.find("thrown at:\n  #0 baton::internal::ChargeCard(int) at "),
            out.stack.find("thrown at:"))
      << out.stack;
  EXPECT_NE(out.stack.find("stack_trace_test.cpp:19\n"), std::string::npos) << out.stack;
  EXPECT_EQ(out.stack.find("RunAttempt"), std::string::npos) << out.stack;
}

TEST(FailureSiteTest, ThrowsInsideTheStandardLibraryAreCaughtAtTheirSource) {
  AttemptOutcome out = RunWith([](TaskContext&) -> Status {
    std::vector<int> empty;
    return empty.at(3) == 0 ? Status::Ok() : Status::Internal("unreachable");
  });
  ASSERT_EQ(out.failure, FailureKind::kError);
  EXPECT_EQ(out.message.rfind("std::out_of_range: ", 0), 0u) << out.message;
  EXPECT_NE(out.stack.find("thrown at:"), std::string::npos) << out.stack;
  EXPECT_NE(out.stack.find("_M_range_check"), std::string::npos) << out.stack;
  EXPECT_NE(out.stack.find("stack_trace_test.cpp"), std::string::npos) << out.stack;
}

TEST(FailureSiteTest, AReturnedStatusShowsWhereItWasMade) {
  AttemptOutcome out = RunWith([](TaskContext&) { return LookUpCustomer(7); });
  ASSERT_EQ(out.failure, FailureKind::kError);
  EXPECT_EQ(out.message, "not_found: customer 7");
  EXPECT_NE(out.stack.find("made at:\n  #0 baton::internal::LookUpCustomer(int) at "),
            std::string::npos)
      << out.stack;
  EXPECT_EQ(out.stack.find("baton::Status::"), std::string::npos) << out.stack;
}

TEST(FailureSiteTest, AStatusMadeBeforeTheAttemptFallsBackToTheWorkersStack) {
  static const Status kMadeEarlier = Status::Unavailable("made before any handler ran");
  AttemptOutcome out = RunWith([](TaskContext&) { return kMadeEarlier; });
  EXPECT_NE(out.stack.find("observed in the worker at:"), std::string::npos) << out.stack;
}

TEST(FailureSiteTest, NothingIsRecordedOutsideAnAttempt) {
  try {
    ChargeCard(1);
  } catch (const std::exception& e) {
    EXPECT_EQ(ThrowSiteOf(dynamic_cast<const void*>(&e)), "");
    EXPECT_EQ(ThrowSiteOf(nullptr), "");
  }
  EXPECT_EQ(SiteOfStatus(LookUpCustomer(1)), "");
}

}  // namespace
}  // namespace baton::internal
