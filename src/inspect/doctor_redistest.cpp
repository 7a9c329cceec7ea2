// The doctor against a real redis-server: every verdict of the "task submitted but never ran"
// checklist is reproduced by setting up exactly that situation, and so is every queue finding.
#include <gtest/gtest.h>

#include <algorithm>

#include "inspect/inspect_test_util.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;

class DoctorTest : public InspectTest {
 protected:
  Verdict Diagnose(const std::string& id, const std::string& ns = kNs) {
    auto v = inspector_->Doctor(ns, id);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : Verdict{};
  }

  std::vector<DoctorCode> QueueCodes(const std::string& type) {
    auto d = inspector_->DoctorQueue(kNs, type);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    std::vector<DoctorCode> codes;
    if (d.ok()) {
      for (const auto& f : d->findings) codes.push_back(f.code);
    }
    return codes;
  }

  static bool Has(const std::vector<DoctorCode>& codes, DoctorCode code) {
    return std::find(codes.begin(), codes.end(), code) != codes.end();
  }

  static EnqueueOptions Delayed(std::int64_t seconds) {
    EnqueueOptions o;
    o.delay_seconds = seconds;
    return o;
  }
};

TEST_F(DoctorTest, NotFoundSaysWhereElseTheIdLives) {
  Verdict v = Diagnose("never-enqueued");
  EXPECT_EQ(v.code, DoctorCode::kNotFound);
  EXPECT_EQ(v.severity, Severity::kProblem);
  EXPECT_NE(v.message.find("wrong namespace"), std::string::npos) << v.message;

  EnqueueOptions o;
  o.task_id = "order-42";
  Enqueue("t", "{}", o, "billing");
  Verdict elsewhere = Diagnose("order-42");
  EXPECT_EQ(elsewhere.code, DoctorCode::kNotFound);
  EXPECT_NE(elsewhere.message.find("--ns billing"), std::string::npos) << elsewhere.message;
  EXPECT_EQ(elsewhere.facts["found_in_namespaces"], nlohmann::json::array({"billing"}));
}

TEST_F(DoctorTest, ScheduledAsksAboutDelaySeconds) {
  std::string id = Enqueue("t", "{}", Delayed(3600));
  Verdict v = Diagnose(id);
  EXPECT_EQ(v.code, DoctorCode::kScheduled);
  EXPECT_NE(v.message.find("delay_seconds=3600: did you mean 0?"), std::string::npos) << v.message;
  EXPECT_GT(v.facts["in_ms"].get<std::int64_t>(), 3500000);
  EXPECT_EQ(v.ToJson()["code"], "scheduled");
}

TEST_F(DoctorTest, OverdueWhenNothingPromotes) {
  std::string id = Enqueue("t", "{}", Delayed(1));
  Sleep(1700ms);  // due after 1 s, plus the 0.5 s grace: nobody promoted it
  Verdict v = Diagnose(id);
  EXPECT_EQ(v.code, DoctorCode::kOverdue);
  EXPECT_NE(v.message.find("batond"), std::string::npos);
}

TEST_F(DoctorTest, RetryingShowsTheLastErrorAndNextAttempt) {
  std::string id = Enqueue("t");
  auto d = Dequeue("t", "g", "c1", 1);
  ASSERT_EQ(Fail("t", "g", d[0], "HTTP 503 from payments"), "retry");
  Verdict v = Diagnose(id);
  EXPECT_EQ(v.code, DoctorCode::kRetrying);
  EXPECT_NE(v.message.find("failed 1 time"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("HTTP 503 from payments"), std::string::npos);
  EXPECT_NE(v.message.find("1 + max_retry = 4"), std::string::npos) << v.message;
}

TEST_F(DoctorTest, DeadSaysWhyAndHowToReplay) {
  std::string id = MakeDead("t", "invalid card number");
  Verdict v = Diagnose(id);
  EXPECT_EQ(v.code, DoctorCode::kDead);
  EXPECT_NE(v.message.find("invalid card number"), std::string::npos);
  EXPECT_NE(v.message.find("baton dlq replay " + id), std::string::npos);
}

TEST_F(DoctorTest, NoGroupWhenNoWorkerEverSubscribed) {
  Enqueue("send_email");
  std::string id = Enqueue("sendEmail");
  Verdict v = Diagnose(id);
  EXPECT_EQ(v.code, DoctorCode::kNoGroup);
  EXPECT_NE(v.message.find("sendEmail, send_email"), std::string::npos) << v.message;
}

TEST_F(DoctorTest, GroupCreatedAtLatestSkippedTheBacklog) {
  std::string id = Enqueue("t");
  Call({"XGROUP", "CREATE", keys().Stream("t"), "g", "$"});
  Verdict v = Diagnose(id);
  EXPECT_EQ(v.code, DoctorCode::kGroupAfterBacklog);
  EXPECT_NE(v.message.find("XGROUP SETID " + keys().Stream("t") + " g 0"), std::string::npos)
      << v.message;
  EXPECT_NE(v.message.find("baton rescue start"), std::string::npos);
  EXPECT_EQ(v.facts["group"], "g");
}

TEST_F(DoctorTest, PendingStuckPastTheLease) {
  std::string id = Enqueue("t");
  // Leased for 1 s, never extended nor acked, and no reaper runs.
  ASSERT_EQ(Dequeue("t", "g", "crashed-worker", 1, kShortLeaseMs).size(), 1u);
  EXPECT_EQ(Diagnose(id).code, DoctorCode::kActive);
  Sleep(1300ms);
  Verdict v = Diagnose(id);
  EXPECT_EQ(v.code, DoctorCode::kPendingStuck);
  EXPECT_NE(v.message.find("crashed-worker"), std::string::npos);
  EXPECT_NE(v.message.find("lease expired"), std::string::npos) << v.message;
  EXPECT_LT(v.facts["lease_left_ms"].get<std::int64_t>(), 0);
  EXPECT_GT(v.facts["idle_ms"].get<std::int64_t>(), 1000);
}

TEST_F(DoctorTest, ActiveWithinTheLease) {
  std::string id = Enqueue("t");
  ASSERT_EQ(Dequeue("t", "g", "busy-worker", 1).size(), 1u);
  Verdict v = Diagnose(id);
  EXPECT_EQ(v.code, DoctorCode::kActive);
  EXPECT_EQ(v.severity, Severity::kOk);
  EXPECT_NE(v.message.find("busy-worker"), std::string::npos);
  EXPECT_NE(v.message.find("lease ends in"), std::string::npos) << v.message;
  EXPECT_GT(v.facts["lease_left_ms"].get<std::int64_t>(), 500000);
}

// Protocol v2 keeps no lease per task, so no task is pending "without a lease" any more: an entry
// delivered outside baton_v2_dequeue (a plain XREADGROUP, e.g. a v1 worker) is leased for the
// namespace's lease_ms since its delivery, and is stuck once that passed, like any other.
TEST_F(DoctorTest, PendingByHandHasTheNamespacesLeaseAndIsStuckAfterIt) {
  std::string id = Enqueue("t");
  Call(internal::fn::Configure(
      kNs, std::vector<std::pair<std::string, std::string>>{{"lease_ms", "1000"}}));
  Call({"XGROUP", "CREATE", keys().Stream("t"), "g", "0"});
  Call({"XREADGROUP", "GROUP", "g", "v1-worker", "COUNT", "1", "STREAMS", keys().Stream("t"), ">"});
  Verdict active = Diagnose(id);
  EXPECT_EQ(active.code, DoctorCode::kActive) << active.message;
  EXPECT_LE(active.facts["lease_left_ms"].get<std::int64_t>(), 1000);
  Sleep(1300ms);
  Verdict v = Diagnose(id);
  EXPECT_EQ(v.code, DoctorCode::kPendingStuck);
  EXPECT_NE(v.message.find("lease expired"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("v1-worker"), std::string::npos) << v.message;
  EXPECT_TRUE(v.facts["lease_deadline_ms"].is_number());
  EXPECT_LT(v.facts["lease_left_ms"].get<std::int64_t>(), 0);
}

TEST_F(DoctorTest, NoLiveConsumerWhenTheWorkersWentAway) {
  Reconnect(ShortThresholds());
  Enqueue("t");
  ASSERT_EQ(Dequeue("t", "g", "old-worker", 1).size(), 1u);
  std::string id = Enqueue("t");
  Sleep(2300ms);  // consumers are live for 2 s
  Verdict v = Diagnose(id);
  EXPECT_EQ(v.code, DoctorCode::kNoLiveConsumer);
  EXPECT_NE(v.message.find("old-worker"), std::string::npos) << v.message;

  // A group with no consumer at all.
  std::string other = Enqueue("u");
  Call({"XGROUP", "CREATE", keys().Stream("u"), "g", "0"});
  Verdict empty = Diagnose(other);
  EXPECT_EQ(empty.code, DoctorCode::kNoLiveConsumer);
  EXPECT_NE(empty.message.find("no consumers at all"), std::string::npos);
}

TEST_F(DoctorTest, QueuedBehindABacklogWithLiveConsumers) {
  Enqueue("t");
  Enqueue("t");
  Enqueue("t");
  std::string id = Enqueue("t");
  ASSERT_EQ(Dequeue("t", "g", "c1", 1).size(), 1u);
  Verdict v = Diagnose(id);
  EXPECT_EQ(v.code, DoctorCode::kQueuedBacklog);
  EXPECT_EQ(v.facts["ahead"], 2);
  EXPECT_NE(v.message.find("behind 2 entries"), std::string::npos) << v.message;
}

// Next in line, nothing in flight: the live consumer simply has not fetched it yet. Not a backlog.
TEST_F(DoctorTest, NextInLineWithNothingInFlightIsNotABacklog) {
  Enqueue("t");
  auto delivered = Dequeue("t", "g", "c1", 1);
  ASSERT_EQ(delivered.size(), 1u);
  Ack("t", "g", delivered[0]);  // c1 is live and holds nothing
  std::string id = Enqueue("t");
  Verdict v = Diagnose(id);
  EXPECT_EQ(v.code, DoctorCode::kQueuedBacklog);
  EXPECT_EQ(v.facts["ahead"], 0);
  EXPECT_EQ(v.facts["in_flight"], 0);
  EXPECT_EQ(v.message.find("backlog"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("nothing ahead of it and nothing in flight"), std::string::npos)
      << v.message;
  EXPECT_NE(v.message.find("1 live consumer that has not fetched it yet"), std::string::npos)
      << v.message;
  EXPECT_EQ(v.severity, Severity::kInfo);  // just queued

  // Next in line while the consumers are busy: it waits for a free slot, still not a backlog.
  std::string busy = Enqueue("t");
  ASSERT_EQ(Dequeue("t", "g", "c1", 1).size(), 1u);  // takes `id`, now in flight
  Verdict w = Diagnose(busy);
  EXPECT_EQ(w.facts["ahead"], 0);
  EXPECT_EQ(w.facts["in_flight"], 1);
  EXPECT_EQ(w.message.find("backlog"), std::string::npos) << w.message;
  EXPECT_NE(w.message.find("next in line"), std::string::npos) << w.message;
}

TEST_F(DoctorTest, LostEntryWhenTheStreamEntryWasDeletedByHand) {
  std::string id = Enqueue("t");
  auto task = inspector_->GetTask(kNs, id);
  Call({"XDEL", keys().Stream("t"), task->stream_id});
  Verdict v = Diagnose(id);
  EXPECT_EQ(v.code, DoctorCode::kLostEntry);
}

TEST_F(DoctorTest, FinishedTasks) {
  std::string done = Enqueue("t");
  auto d = Dequeue("t", "g", "c1", 1);
  Ack("t", "g", d[0], "c1");
  Verdict v = Diagnose(done);
  EXPECT_EQ(v.code, DoctorCode::kDone);
  EXPECT_NE(v.message.find("after 1 attempt on worker c1"), std::string::npos) << v.message;
  EXPECT_EQ(v.facts["type"], "t");

  std::string cancelled = Enqueue("t");
  ASSERT_TRUE(client_->Cancel(kNs, cancelled).ok());
  EXPECT_EQ(Diagnose(cancelled).code, DoctorCode::kCancelled);

  std::string dead = MakeDead("t", "x");
  ASSERT_TRUE(inspector_->DeleteDead(kNs, dead).ok());
  EXPECT_EQ(Diagnose(dead).code, DoctorCode::kDeleted);

  const std::pair<std::string, std::string> cap[] = {{"dlq_max", "1"}};
  Call(internal::fn::Configure(kNs, cap));
  std::string old = MakeDead("t", "x");
  MakeDead("t", "y");  // over the cap of 1: the older one is dropped
  Verdict dropped = Diagnose(old);
  EXPECT_EQ(dropped.code, DoctorCode::kDropped);
  EXPECT_NE(dropped.message.find("dlq_max"), std::string::npos) << dropped.message;
  EXPECT_EQ(dropped.ToJson()["code"], "dropped");
}

TEST_F(DoctorTest, QueueUnknownTypeIdleAndHealthy) {
  EXPECT_EQ(QueueCodes("nope"), std::vector<DoctorCode>{DoctorCode::kNotFound});

  Enqueue("idle");
  auto d = Dequeue("idle", "g", "c1", 1);
  ASSERT_EQ(d.size(), 1u);
  Ack("idle", "g", d[0]);
  EXPECT_EQ(QueueCodes("idle"), std::vector<DoctorCode>{DoctorCode::kIdle});

  Enqueue("busy");
  ASSERT_EQ(Dequeue("busy", "g", "c1", 1).size(), 1u);
  EXPECT_EQ(QueueCodes("busy"), std::vector<DoctorCode>{DoctorCode::kHealthy});
}

// Regression: an emptied stream (tasks cancelled, the rest done) has no backlog, whatever Redis
// 7.0's XINFO GROUPS lag says after the deletions.
TEST_F(DoctorTest, QueueWithCancelledTasksHasNoPhantomBacklog) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(Enqueue("t"));
  auto held = Dequeue("t", "g", "c1", 1);
  ASSERT_EQ(held.size(), 1u);
  for (int i = 1; i < 5; ++i) ASSERT_TRUE(client_->Cancel(kNs, ids[i]).ok());
  auto running = QueueCodes("t");
  EXPECT_FALSE(Has(running, DoctorCode::kBacklogGrowing));
  EXPECT_FALSE(Has(running, DoctorCode::kQueuedBacklog));
  EXPECT_EQ(running, std::vector<DoctorCode>{DoctorCode::kHealthy});
  Ack("t", "g", held[0]);
  EXPECT_EQ(QueueCodes("t"), std::vector<DoctorCode>{DoctorCode::kIdle});
}

TEST_F(DoctorTest, QueueFindings) {
  Enqueue("nogroup");
  EXPECT_TRUE(Has(QueueCodes("nogroup"), DoctorCode::kNoGroup));

  Enqueue("skipped");
  Enqueue("skipped");
  Call({"XGROUP", "CREATE", keys().Stream("skipped"), "g", "$"});
  auto skipped = inspector_->DoctorQueue(kNs, "skipped");
  ASSERT_TRUE(skipped.ok());
  ASSERT_EQ(skipped->findings.front().code, DoctorCode::kGroupAfterBacklog);
  EXPECT_EQ(skipped->findings.front().facts["skipped"], 2);

  for (int i = 0; i < 5; ++i) Enqueue("growing");
  ASSERT_EQ(Dequeue("growing", "g", "c1", 1).size(), 1u);
  EXPECT_TRUE(Has(QueueCodes("growing"), DoctorCode::kBacklogGrowing));

  MakeDead("deadq", "boom");
  EXPECT_TRUE(Has(QueueCodes("deadq"), DoctorCode::kDead));

  Enqueue("stuck");
  Enqueue("stuck");
  ASSERT_EQ(Dequeue("stuck", "g", "c1", 1, kShortLeaseMs).size(), 1u);
  Enqueue("late", "{}", Delayed(1));
  Reconnect(ShortThresholds());
  Sleep(2300ms);  // past the lease (1 s), the live window (2 s) and the due time + grace
  auto stuck_queue = inspector_->DoctorQueue(kNs, "stuck");
  ASSERT_TRUE(stuck_queue.ok());
  EXPECT_EQ(stuck_queue->queue.expired_leases, 1);
  std::vector<DoctorCode> stuck;
  for (const auto& f : stuck_queue->findings) {
    stuck.push_back(f.code);
    if (f.code == DoctorCode::kPendingStuck) {
      EXPECT_EQ(f.facts["stuck"], 1);
      EXPECT_EQ(f.facts["oldest_consumer"], "c1");
      EXPECT_GT(f.facts["oldest_expired_ms_ago"].get<std::int64_t>(), 1000);
    }
  }
  EXPECT_TRUE(Has(stuck, DoctorCode::kPendingStuck));
  EXPECT_TRUE(Has(stuck, DoctorCode::kNoLiveConsumer));
  EXPECT_TRUE(Has(QueueCodes("late"), DoctorCode::kOverdue));

  // Worst first.
  auto d = inspector_->DoctorQueue(kNs, "deadq");
  ASSERT_TRUE(d.ok());
  for (std::size_t i = 1; i < d->findings.size(); ++i) {
    EXPECT_GE(static_cast<int>(d->findings[i - 1].severity),
              static_cast<int>(d->findings[i].severity));
  }
}

}  // namespace
}  // namespace baton::testing
