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

TEST(TaskCodec, EntryTaskSplitsAtTheFirstSixBars) {
  auto t = ParseEntryTask("0190-a|3|0|1722489600||0|");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->id, "0190-a");
  EXPECT_EQ(t->max_retry, "3");
  EXPECT_EQ(t->delay_seconds, "0");
  EXPECT_EQ(t->created_at, "1722489600");
  EXPECT_EQ(t->execution_timeout, "");
  EXPECT_EQ(t->attempt, "0");
  EXPECT_EQ(t->extra, "");

  // EXTRA is last because it may contain '|'.
  auto extra = ParseEntryTask(R"(x|1|5|1|30|2|{"a":"b|c","d":"|"})");
  ASSERT_TRUE(extra.has_value());
  EXPECT_EQ(extra->execution_timeout, "30");
  EXPECT_EQ(extra->attempt, "2");
  EXPECT_EQ(extra->extra, R"({"a":"b|c","d":"|"})");

  // Parts are text as written: checking them is the functions' business.
  auto odd = ParseEntryTask("|many|||||");
  ASSERT_TRUE(odd.has_value());
  EXPECT_EQ(odd->id, "");
  EXPECT_EQ(odd->max_retry, "many");

  EXPECT_FALSE(ParseEntryTask("x|1|0|1||0").has_value());  // five '|'
  EXPECT_FALSE(ParseEntryTask("").has_value());
}

// A work stream entry as XREADGROUP returns it: [SID, [field, value, ...]]'s field list.
Reply Fields(const std::vector<std::string>& flat) { return Entries({flat}); }

TEST(TaskCodec, DecodesAStreamEntry) {
  Reply fields = Fields({"task", R"(t-1|3|60|1722489600|30|2|{"priority":2,"x":"a|b"})", "payload",
                         R"({"n": 1.10})"});
  std::string id, attempt;
  auto delivered = DecodeStreamEntry("shop", "mail", "1-0", fields, &id, &attempt);
  ASSERT_TRUE(delivered.ok()) << delivered.status().ToString();
  EXPECT_EQ(id, "t-1");
  EXPECT_EQ(attempt, "2");
  EXPECT_EQ(delivered->stream_id, "1-0");
  EXPECT_EQ(delivered->attempt, 3);
  EXPECT_EQ(delivered->task.task_id, "t-1");
  EXPECT_EQ(delivered->task.payload_json, R"({"n": 1.10})");
  EXPECT_EQ(delivered->task.max_retry, 3);
  EXPECT_EQ(delivered->task.delay_seconds, 60);
  EXPECT_EQ(delivered->task.execution_timeout, 30);
  EXPECT_EQ(delivered->task.extra["x"], "a|b");
}

// Found by the fuzzers (tests/fuzz): copying extra nested 100,000 deep overflowed the stack. Such
// an entry is refused with the field and the rule (the worker dead-letters it); a deep payload is
// only text, so it decodes.
TEST(TaskCodec, DeeplyNestedExtraIsRefusedNotACrash) {
  const std::string deep = "{\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  std::string id, attempt;
  auto refused = DecodeStreamEntry(
      "shop", "mail", "1-0", Fields({"task", "t-1|3|0|1722489600||0|" + deep, "payload", "{}"}),
      &id, &attempt);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "extra: must not nest arrays and objects deeper than 256 levels");
  EXPECT_EQ(id, "t-1");
  auto deep_payload =
      DecodeStreamEntry("shop", "mail", "1-0",
                        Fields({"task", "t-2|3|0|1722489600||0|", "payload", deep}), &id, &attempt);
  EXPECT_TRUE(deep_payload.ok()) << deep_payload.status().ToString();
}

TEST(TaskCodec, MalformedStreamEntriesNameWhatIsWrong) {
  std::string id = "stale", attempt = "stale";
  auto no_task = DecodeStreamEntry("shop", "mail", "1-0", Fields({"payload", "{}"}), &id, &attempt);
  ASSERT_FALSE(no_task.ok());
  EXPECT_EQ(no_task.status().message(), "task: missing field");
  EXPECT_EQ(id, "");
  EXPECT_EQ(attempt, "");

  auto short_task = DecodeStreamEntry("shop", "mail", "1-0",
                                      Fields({"task", "t|1|0", "payload", "{}"}), &id, &attempt);
  ASSERT_FALSE(short_task.ok());
  EXPECT_NE(short_task.status().message().find("task: must be ID|MAX_RETRY"), std::string::npos);

  // The task field splits: the id and attempt are given even though the payload is missing.
  auto no_payload = DecodeStreamEntry("shop", "mail", "1-0",
                                      Fields({"task", "t-2|1|0|1722489600||0|"}), &id, &attempt);
  ASSERT_FALSE(no_payload.ok());
  EXPECT_EQ(no_payload.status().message(), "payload: missing field");
  EXPECT_EQ(id, "t-2");
  EXPECT_EQ(attempt, "0");

  auto not_object = DecodeStreamEntry("shop", "mail", "1-0",
                                      Fields({"task", "t-3|1|0|1722489600||0|", "payload", "[1]"}),
                                      &id, &attempt);
  ASSERT_FALSE(not_object.ok());
  EXPECT_NE(not_object.status().message().find("payload"), std::string::npos);
  EXPECT_EQ(id, "t-3");
}

}  // namespace
}  // namespace baton::internal
