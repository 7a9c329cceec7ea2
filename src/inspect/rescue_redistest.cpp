// The disaster-recovery consumer group against a real redis-server: a rescue group drains the
// broken group's backlog (undelivered, stuck and skipped entries), the broken group only sees new
// entries, and finish hands back with nothing skipped and nothing delivered twice.
#include <gtest/gtest.h>

#include <set>

#include "inspect/inspect_test_util.h"

namespace baton::testing {
namespace {

class RescueTest : public InspectTest {
 protected:
  std::vector<std::string> EnqueueN(int n) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) ids.push_back(Enqueue("t", "{\"i\":" + std::to_string(i) + "}"));
    return ids;
  }

  std::string GroupField(const std::string& group, const std::string& field) {
    internal::Reply groups = Call({"XINFO", "GROUPS", keys().Stream("t")});
    for (const auto& g : groups.elements) {
      std::string name;
      std::string value;
      for (std::size_t i = 0; i + 1 < g.elements.size(); i += 2) {
        if (g.elements[i].str == "name") name = g.elements[i + 1].AsString();
        if (g.elements[i].str == field) value = g.elements[i + 1].AsString();
      }
      if (name == group) return value;
    }
    return "(no group)";
  }
};

TEST_F(RescueTest, RoundTripNothingSkippedNothingTwice) {
  std::vector<std::string> backlog = EnqueueN(6);
  // The broken group took two tasks and hangs on them.
  ASSERT_EQ(Dequeue("t", "g", "broken", 2).size(), 2u);

  auto started = inspector_->RescueStart(kNs, "t", "g");
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_EQ(started->state.rescue_group, "g.rescue");
  EXPECT_EQ(started->state.backlog_at_start, 6);
  EXPECT_EQ(started->undelivered, 6);
  EXPECT_EQ(started->group_pending_left, 2);
  EXPECT_FALSE(started->ready_to_finish);
  const std::string handover = started->state.handover_id;
  EXPECT_EQ(GroupField("g", "last-delivered-id"), handover);
  EXPECT_EQ(redis_.String({"HGET", keys().Rescue("t"), "handover_id"}), handover);

  // G's consumers see nothing of the backlog any more.
  EXPECT_TRUE(Dequeue("t", "g", "broken", 10).empty());

  // A second start is refused; finishing before the backlog is drained is refused.
  EXPECT_EQ(inspector_->RescueStart(kNs, "t", "g").status().code(), StatusCode::kConflict);
  auto early = inspector_->RescueFinish(kNs, "t", false);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.status().code(), StatusCode::kConflict);
  EXPECT_NE(early.status().message().find("6 entries up to the handover"), std::string::npos)
      << early.status().message();

  // Fixed workers drain everything through the rescue group.
  auto rescued = Dequeue("t", "g.rescue", "fixed", 100);
  ASSERT_EQ(rescued.size(), 6u);
  std::set<std::string> seen;
  for (const auto& d : rescued) seen.insert(d.id);
  EXPECT_EQ(seen, std::set<std::string>(backlog.begin(), backlog.end()));
  auto half = inspector_->RescueStatus(kNs, "t");
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->undelivered, 0);
  EXPECT_EQ(half->rescue_pending, 6);
  EXPECT_FALSE(half->ready_to_finish);
  for (const auto& d : rescued) Ack("t", "g.rescue", d, "fixed");

  auto status = inspector_->RescueStatus(kNs, "t");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->undelivered, 0);
  EXPECT_EQ(status->rescue_pending, 0);
  EXPECT_EQ(status->rescue_pending_after, 0);
  EXPECT_EQ(status->group_pending_left, 0);
  EXPECT_TRUE(status->ready_to_finish);

  auto finished = inspector_->RescueFinish(kNs, "t", false);
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  EXPECT_EQ(finished->acked_in_group, 2);  // the two the broken consumer held
  EXPECT_EQ(finished->group_resumes_after, handover);
  EXPECT_EQ(finished->left_behind, 0);
  EXPECT_EQ(GroupField("g.rescue", "name"), "(no group)");
  EXPECT_EQ(GroupField("g", "pending"), "0");
  EXPECT_EQ(redis_.Integer({"EXISTS", keys().Rescue("t")}), 0);
  for (const auto& id : backlog) {
    EXPECT_EQ(inspector_->GetTask(kNs, id)->state, TaskState::kDone) << id;
  }

  // G resumes with new tasks only.
  std::vector<std::string> fresh = EnqueueN(2);
  auto resumed = Dequeue("t", "g", "healthy", 100);
  ASSERT_EQ(resumed.size(), 2u);
  EXPECT_EQ(resumed[0].id, fresh[0]);
  EXPECT_EQ(resumed[1].id, fresh[1]);
  EXPECT_EQ(inspector_->RescueStatus(kNs, "t").status().code(), StatusCode::kNotFound);
}

TEST_F(RescueTest, FinishWaitsForRescueWorkersHoldingNewerTasks) {
  EnqueueN(2);
  Dequeue("t", "g", "broken", 1);
  ASSERT_TRUE(inspector_->RescueStart(kNs, "t", "g").ok());
  std::string newer = Enqueue("t");  // after the handover: G's, but the rescue group sees it too
  auto rescued = Dequeue("t", "g.rescue", "fixed", 100);
  ASSERT_EQ(rescued.size(), 3u);
  for (const auto& d : rescued) {
    if (d.id != newer) Ack("t", "g.rescue", d, "fixed");
  }
  auto status = inspector_->RescueStatus(kNs, "t");
  EXPECT_EQ(status->rescue_pending_after, 1);
  EXPECT_FALSE(status->ready_to_finish);
  auto refused = inspector_->RescueFinish(kNs, "t", false);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("1 newer entries still held"), std::string::npos)
      << refused.status().message();

  Ack("t", "g.rescue", rescued.back(), "fixed");
  auto finished = inspector_->RescueFinish(kNs, "t", false);
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  EXPECT_EQ(finished->acked_in_group, 1);
  // The newer task was done by the rescue: G does not get it again.
  EXPECT_TRUE(Dequeue("t", "g", "healthy", 10).empty());
}

TEST_F(RescueTest, RescueRecoversEntriesAGroupSkipped) {
  std::vector<std::string> backlog = EnqueueN(3);
  Call({"XGROUP", "CREATE", keys().Stream("t"), "g", "$"});
  auto started = inspector_->RescueStart(kNs, "t", "g");
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_EQ(started->undelivered, 3);
  auto rescued = Dequeue("t", "g.rescue", "fixed", 10);
  ASSERT_EQ(rescued.size(), 3u);
  for (const auto& d : rescued) Ack("t", "g.rescue", d, "fixed");
  ASSERT_TRUE(inspector_->RescueFinish(kNs, "t", false).ok());
  for (const auto& id : backlog) EXPECT_EQ(inspector_->GetTask(kNs, id)->state, TaskState::kDone);
}

TEST_F(RescueTest, ForceFinishReportsWhatItLeftBehind) {
  EnqueueN(4);
  Dequeue("t", "g", "broken", 1);
  ASSERT_TRUE(inspector_->RescueStart(kNs, "t", "g").ok());
  auto one = Dequeue("t", "g.rescue", "fixed", 1);
  ASSERT_EQ(one.size(), 1u);
  Ack("t", "g.rescue", one[0], "fixed");
  ASSERT_EQ(Dequeue("t", "g.rescue", "fixed", 1).size(), 1u);  // held, not finished
  auto forced = inspector_->RescueFinish(kNs, "t", true);
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_EQ(forced->left_behind, 3);  // 2 undelivered + 1 pending in the rescue group
  EXPECT_EQ(forced->acked_in_group, 1);
}

TEST_F(RescueTest, StartNeedsTheStreamAndTheGroup) {
  EXPECT_EQ(inspector_->RescueStart(kNs, "t", "g").status().code(), StatusCode::kNotFound);
  Enqueue("t");
  auto no_group = inspector_->RescueStart(kNs, "t", "g");
  EXPECT_EQ(no_group.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_group.status().message().find("consumer group g"), std::string::npos);
  EXPECT_EQ(inspector_->RescueFinish(kNs, "t", false).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(inspector_->RescueStart(kNs, "t", "").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace baton::testing
