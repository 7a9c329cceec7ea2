#include "broker/enqueue_call.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace baton::internal {
namespace {

EnqueueItem Item(std::string ns, std::string type, std::string id) {
  EnqueueItem item;
  item.task.ns = std::move(ns);
  item.task.task_type = std::move(type);
  item.task.task_id = std::move(id);
  item.task.created_at = 1722489600;
  return item;
}

TEST(EnqueueCall, GroupsByNamespaceAndTypeInOrderOfFirstAppearance) {
  const std::vector<EnqueueItem> items = {Item("a", "x", "1"), Item("b", "x", "2"),
                                          Item("a", "y", "3"), Item("a", "x", "4"),
                                          Item("b", "x", "5")};
  const auto calls = PlanEnqueueCalls(items);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].ns, "a");
  EXPECT_EQ(calls[0].task_type, "x");
  EXPECT_EQ(calls[0].items, (std::vector<std::size_t>{0, 3}));
  EXPECT_EQ(calls[1].ns, "b");
  EXPECT_EQ(calls[1].items, (std::vector<std::size_t>{1, 4}));
  EXPECT_EQ(calls[2].task_type, "y");
  EXPECT_EQ(calls[2].items, (std::vector<std::size_t>{2}));
}

TEST(EnqueueCall, SplitsLargeGroups) {
  std::vector<EnqueueItem> items;
  for (int i = 0; i < 600; ++i) items.push_back(Item("a", "x", std::to_string(i)));
  const auto calls = PlanEnqueueCalls(items);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].items.size(), 256u);
  EXPECT_EQ(calls[1].items.size(), 256u);
  EXPECT_EQ(calls[2].items.size(), 88u);
  EXPECT_EQ(calls[1].items.front(), 256u);
  EXPECT_EQ(calls[2].items.back(), 599u);
}

TEST(EnqueueCall, CommandLayout) {
  std::vector<EnqueueItem> items = {Item("shop", "mail", "t1"), Item("shop", "mail", "t2")};
  items[1].unique_key = "order-7";
  items[1].unique_ttl_s = 60;
  const auto calls = PlanEnqueueCalls(items);
  ASSERT_EQ(calls.size(), 1u);
  const auto argv = BuildEnqueueCommand(calls[0], items);
  // FCALL name numkeys, 9 fixed keys + 1 unique key, N, 10 values per task.
  ASSERT_EQ(argv.size(), 3u + 9 + 1 + 1 + 20);
  EXPECT_EQ(argv[0], "FCALL");
  EXPECT_EQ(argv[1], "baton_v2_enqueue");
  EXPECT_EQ(argv[2], "10");
  EXPECT_EQ(argv[3], "baton:v2:{shop}:stream:mail");
  EXPECT_EQ(argv[4], "baton:v2:{shop}:scheduled:mail");
  EXPECT_EQ(argv[5], "baton:v2:{shop}:tasks");
  EXPECT_EQ(argv[6], "baton:v2:{shop}:bodies");
  EXPECT_EQ(argv[7], "baton:v2:{shop}:events");
  EXPECT_EQ(argv[8], "baton:v2:{shop}:types");
  EXPECT_EQ(argv[9], "baton:v2:{shop}:done");
  EXPECT_EQ(argv[10], "baton:v2:{shop}:ended");
  EXPECT_EQ(argv[11], "baton:v2:{shop}:config");
  EXPECT_EQ(argv[12], "baton:v2:{shop}:unique:order-7");  // only tasks with a unique key
  EXPECT_EQ(argv[13], "2");
  EXPECT_EQ(argv[14], "t1");
  EXPECT_EQ(argv[24], "t2");
  EXPECT_EQ(argv[32], "order-7");
  EXPECT_EQ(argv[33], "60");
}

// Appends one task's status and detail to a flat enqueue reply.
void AddResult(Reply* reply, std::string status, Reply detail) {
  reply->elements.push_back(Reply{Reply::Type::kString, std::move(status), 0, {}});
  reply->elements.push_back(std::move(detail));
}

TEST(EnqueueCall, ReadsEveryOutcome) {
  const std::vector<EnqueueItem> items = {Item("a", "x", "1"), Item("a", "x", "2"),
                                          Item("a", "x", "3"), Item("a", "x", "4")};
  const auto calls = PlanEnqueueCalls(items);
  Reply reply;
  reply.type = Reply::Type::kArray;
  AddResult(&reply, "queued", Reply{Reply::Type::kString, "17-0", 0, {}});
  AddResult(&reply, "scheduled", Reply{Reply::Type::kInteger, "", 1722489700000, {}});
  AddResult(&reply, "duplicate", Reply{Reply::Type::kString, "done", 0, {}});
  AddResult(&reply, "unique_conflict", Reply{Reply::Type::kString, "9", 0, {}});
  std::vector<EnqueueResult> results(items.size());
  ASSERT_TRUE(ReadEnqueueReply(reply, calls[0], items, &results).ok());
  EXPECT_EQ(results[0].outcome, EnqueueOutcome::kQueued);
  EXPECT_EQ(results[0].stream_id, "17-0");
  EXPECT_EQ(results[1].outcome, EnqueueOutcome::kScheduled);
  EXPECT_EQ(results[1].due_ms, 1722489700000);
  EXPECT_EQ(results[2].outcome, EnqueueOutcome::kDuplicate);
  EXPECT_EQ(results[2].detail, "done");
  EXPECT_EQ(results[3].outcome, EnqueueOutcome::kUniqueConflict);
  EXPECT_EQ(results[3].detail, "9");
  EXPECT_EQ(results[3].task_id, "4");

  reply.elements.pop_back();  // one value short
  EXPECT_EQ(ReadEnqueueReply(reply, calls[0], items, &results).code(), StatusCode::kInternal);
  reply.elements.pop_back();  // three whole results for four tasks
  EXPECT_EQ(ReadEnqueueReply(reply, calls[0], items, &results).code(), StatusCode::kInternal);
  const Reply error{Reply::Type::kError, "BATON_INVALID payload: must be a JSON object", 0, {}};
  EXPECT_EQ(ReadEnqueueReply(error, calls[0], items, &results).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace baton::internal
