// Work stream entries as the inspector reads them: the two fields task ('ID|MAX_RETRY|
// DELAY_SECONDS|CREATED_AT|EXECUTION_TIMEOUT|ATTEMPT|EXTRA') and payload, and what it makes of
// foreign or malformed entries (whatever it can, never a failure).
#include "inspect/task_record.h"

#include <gtest/gtest.h>

#include <initializer_list>

#include "core/json_span.h"

namespace baton::internal {
namespace {

Reply Text(const std::string& s) {
  Reply r;
  r.type = Reply::Type::kString;
  r.str = s;
  return r;
}

// A flat field/value reply.
Reply Fields(std::initializer_list<std::string> values) {
  Reply r;
  r.type = Reply::Type::kArray;
  for (const std::string& v : values) r.elements.push_back(Text(v));
  return r;
}

TEST(TaskRecordTest, BodyFromATwoFieldEntry) {
  Reply entry =
      Fields({"task", R"(t-1|5|0|1722489600|30|1|{"trace":1})", "payload", R"({"n": 1.50})"});
  TaskBody body = BodyFromEntry(entry);
  EXPECT_EQ(body.payload, R"({"n": 1.50})");
  EXPECT_EQ(body.max_retry, "5");
  EXPECT_EQ(body.delay_seconds, "0");
  EXPECT_EQ(body.created_at, "1722489600");
  EXPECT_EQ(body.execution_timeout, "30");
  EXPECT_EQ(body.extra, R"({"trace":1})");
  EXPECT_EQ(body.attempt, "1");
  EXPECT_EQ(EntryTaskId(entry), "t-1");
}

TEST(TaskRecordTest, ForeignEntriesGiveWhatTheyHave) {
  // One field per value (no task field): the payload only, and no task id.
  Reply foreign = Fields({"id", "raw-1", "payload", "{}", "max_retry", "3"});
  TaskBody body = BodyFromEntry(foreign);
  EXPECT_EQ(body.payload, "{}");
  EXPECT_EQ(body.max_retry, "");
  EXPECT_EQ(body.attempt, "");
  EXPECT_EQ(EntryTaskId(foreign), "");

  // A task field that does not split, and no payload.
  Reply broken = Fields({"task", "just-an-id"});
  TaskBody none = BodyFromEntry(broken);
  EXPECT_EQ(none.payload, "");
  EXPECT_EQ(none.created_at, "");
  EXPECT_EQ(EntryTaskId(broken), "");

  // Fields in another order are found by name.
  Reply swapped = Fields({"payload", "{}", "task", "t-2|0|0|1||0|"});
  EXPECT_EQ(BodyFromEntry(swapped).payload, "{}");
  EXPECT_EQ(EntryTaskId(swapped), "t-2");
}

// One failure of the errors hash (an ID|K value, docs/keyspace.md).
TEST(TaskRecordTest, OneRecordedFailure) {
  auto e = ParseTaskError(
      R"j({"attempt":2,"kind":"timeout","error":"slow","stack":"at f()","worker":"w1",)j"
      R"j("at_ms":1722489600123})j");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->attempt, 2);
  EXPECT_EQ(e->kind, "timeout");
  EXPECT_EQ(e->error, "slow");
  EXPECT_EQ(e->stack, "at f()");
  EXPECT_EQ(e->worker, "w1");
  EXPECT_EQ(e->at_ms, 1722489600123);
  nlohmann::json shown = ErrorsToJson({*e});
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_EQ(shown[0]["kind"], "timeout");
  EXPECT_EQ(shown[0]["at_ms"], 1722489600123);

  // Invalid UTF-8 inside a string (a worker's stderr cut mid-character) is replaced, not fatal.
  auto cut = ParseTaskError("{\"attempt\":1,\"kind\":\"error\",\"error\":\"caf\xc3\"}");
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->error, "caf\xef\xbf\xbd");
  EXPECT_EQ(cut->worker, "");

  // Not a failure's object: skipped by the readers.
  EXPECT_FALSE(ParseTaskError("3").has_value());
  EXPECT_FALSE(ParseTaskError(R"([{"attempt":1}])").has_value());
  EXPECT_FALSE(ParseTaskError("{oops").has_value());
}

TEST(TaskRecordTest, APayloadTooDeepToPrintIsShownAsText) {
  TaskBody body;
  body.payload = "{\"a\":" + std::string(250000, '[') + std::string(250000, ']') + "}";
  body.extra = R"({"headers": {"producer": "[not a bracket] {"}})";
  const nlohmann::json out = BodyToJson(body);
  ASSERT_TRUE(out["payload"].is_string());  // printing it as JSON would recurse 250,000 deep
  EXPECT_EQ(out["payload"].get<std::string>(), body.payload);
  EXPECT_FALSE(out.dump().empty());
  EXPECT_TRUE(out["extra"].is_object());  // brackets inside strings do not count

  body.payload = "{\"a\":" + std::string(200, '[') + std::string(200, ']') + "}";
  EXPECT_TRUE(BodyToJson(body)["payload"].is_object());
  EXPECT_EQ(JsonNestingDepth(body.payload), 201u);
  EXPECT_EQ(JsonNestingDepth(R"("[[[" 1)"), 0u);
  EXPECT_EQ(JsonNestingDepth(R"({"a": "\"[", "b": [{}]})"), 3u);
}

}  // namespace
}  // namespace baton::internal
