#include "broker/task_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace baton::internal {
namespace {

Reply Str(std::string s) { return Reply{Reply::Type::kString, std::move(s), 0, {}}; }

// A baton_dequeue `entries` array from rows of 9 strings.
Reply Entries(const std::vector<std::vector<std::string>>& rows) {
  Reply entries;
  entries.type = Reply::Type::kArray;
  for (const auto& row : rows) {
    for (const auto& value : row) entries.elements.push_back(Str(value));
  }
  return entries;
}

std::vector<std::string> GoodRow() {
  return {"1722489600123-0",
          "t-1",
          R"({"n": 1.10})",
          "3",
          "60",
          "1722489600",
          "30",
          R"({"trace":{"traceparent":"00-a-b-01"},"priority":2})",
          "2"};
}

TEST(TaskCodec, EncodeEnqueueArgs) {
  Task task;
  task.task_id = "t-1";
  task.ns = "shop";
  task.task_type = "mail";
  task.payload_json = R"({"a": 1.10})";
  task.max_retry = 5;
  task.delay_seconds = 60;
  task.created_at = 1722489600;
  EXPECT_EQ(EncodeEnqueueArgs(task, 0, "", 99),
            (std::vector<std::string>{"t-1", R"({"a": 1.10})", "5", "60", "1722489600", "", "", "0",
                                      "", "0"}));
  task.execution_timeout = 30;
  task.extra["headers"] = {{"h", "v"}};
  EXPECT_EQ(
      EncodeEnqueueArgs(task, 1722489700000, "order-7", 3600),
      (std::vector<std::string>{"t-1", R"({"a": 1.10})", "5", "60", "1722489600", "30",
                                R"({"headers":{"h":"v"}})", "1722489700000", "order-7", "3600"}));
}

TEST(TaskCodec, DecodesAnEntry) {
  const Reply entries = Entries({GoodRow(), GoodRow()});
  std::string sid, id;
  auto delivered = DecodeDequeuedEntry("shop", "mail", entries, 1, &sid, &id);
  ASSERT_TRUE(delivered.ok()) << delivered.status().ToString();
  EXPECT_EQ(delivered->stream_id, "1722489600123-0");
  EXPECT_EQ(delivered->attempt, 3);  // 2 attempts before this delivery
  const Task& task = delivered->task;
  EXPECT_EQ(task.task_id, "t-1");
  EXPECT_EQ(task.ns, "shop");
  EXPECT_EQ(task.task_type, "mail");
  EXPECT_EQ(task.payload_json, R"({"n": 1.10})");  // byte for byte
  EXPECT_EQ(task.max_retry, 3);
  EXPECT_EQ(task.delay_seconds, 60);
  EXPECT_EQ(task.created_at, 1722489600);
  EXPECT_EQ(task.execution_timeout, 30);
  EXPECT_EQ(task.extra["priority"], 2);
  EXPECT_EQ(task.extra["trace"]["traceparent"], "00-a-b-01");
  EXPECT_EQ(sid, "1722489600123-0");
  EXPECT_EQ(id, "t-1");
}

TEST(TaskCodec, EmptyOptionalFields) {
  auto row = GoodRow();
  row[6] = "";
  row[7] = "";
  row[8] = "0";
  auto delivered = DecodeDequeuedEntry("shop", "mail", Entries({row}), 0, nullptr, nullptr);
  ASSERT_TRUE(delivered.ok()) << delivered.status().ToString();
  EXPECT_FALSE(delivered->task.execution_timeout.has_value());
  EXPECT_TRUE(delivered->task.extra.empty());
  EXPECT_EQ(delivered->attempt, 1);
}

TEST(TaskCodec, MalformedEntriesNameTheFieldAndStillGiveTheIds) {
  struct Case {
    std::size_t column;
    std::string value;
    std::string field;
  };
  const Case cases[] = {
      {2, "[1,2]", "payload"},
      {2, "not json", "payload"},
      {2, "", "payload"},
      {3, "three", "max_retry"},
      {3, "26", "max_retry"},
      {4, "-1", "delay_seconds"},
      {5, "1722489600000", "created_at"},
      {6, "0", "execution_timeout"},
      {7, "[1]", "extra"},
      {7, "{bad", "extra"},
      {8, "x", "attempt"},
      {1, "bad id", "task_id"},
      {7, R"({"trace":"x"})", "trace"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field + " = " + c.value);
    auto row = GoodRow();
    row[c.column] = c.value;
    std::string sid, id;
    auto delivered = DecodeDequeuedEntry("shop", "mail", Entries({row}), 0, &sid, &id);
    ASSERT_FALSE(delivered.ok());
    EXPECT_EQ(delivered.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(delivered.status().message().rfind(c.field + ": ", 0), 0u)
        << delivered.status().message();
    EXPECT_EQ(sid, "1722489600123-0");
    EXPECT_EQ(id, c.column == 1 ? c.value : "t-1");
  }
}

TEST(TaskCodec, ShortReplyIsInternal) {
  Reply entries = Entries({GoodRow()});
  entries.elements.pop_back();
  auto delivered = DecodeDequeuedEntry("shop", "mail", entries, 0, nullptr, nullptr);
  ASSERT_FALSE(delivered.ok());
  EXPECT_EQ(delivered.status().code(), StatusCode::kInternal);
  EXPECT_FALSE(DecodeDequeuedEntry("shop", "mail", Entries({GoodRow()}), 1, nullptr, nullptr).ok());
}

TEST(TaskCodec, IntegerRepliesAreAccepted) {
  Reply entries = Entries({GoodRow()});
  entries.elements[8] = Reply{Reply::Type::kInteger, "", 4, {}};
  auto delivered = DecodeDequeuedEntry("shop", "mail", entries, 0, nullptr, nullptr);
  ASSERT_TRUE(delivered.ok()) << delivered.status().ToString();
  EXPECT_EQ(delivered->attempt, 5);
}

}  // namespace
}  // namespace baton::internal
