// The task contract: every fixture of contract/fixtures/, then round trips and the C++-side rules.
#include "baton/task.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/json_span.h"

namespace baton {
namespace {

using nlohmann::json;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::filesystem::path> FixturePaths() {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(BATON_CONTRACT_DIR) / "fixtures")) {
    // Task documents are valid_*.json and invalid_*.json (partitions.json holds other vectors).
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".json" &&
        (name.starts_with("valid_") || name.starts_with("invalid_"))) {
      paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// The document text a fixture describes (see contract/fixtures/README.md).
std::string FixtureDocumentText(const std::string& file_text, const json& fixture) {
  if (fixture.contains("document_text")) return fixture["document_text"].get<std::string>();
  if (fixture.contains("payload_repeat")) {
    const json& repeat = fixture["payload_repeat"];
    json document = fixture["document"];
    document["payload"][repeat["key"].get<std::string>()] =
        std::string(repeat["count"].get<std::size_t>(), repeat["char"].get<std::string>().at(0));
    return document.dump();
  }
  auto span = internal::FindTopLevelMember(file_text, "document");
  EXPECT_TRUE(span.has_value());
  return std::string(span.value_or(""));
}

TEST(ContractFixtures, ThereAreEnough) { EXPECT_GE(FixturePaths().size(), 24u); }

TEST(ContractFixtures, EveryFixtureIsAcceptedOrRefusedAsItSays) {
  for (const auto& path : FixturePaths()) {
    SCOPED_TRACE(path.filename().string());
    const std::string file_text = ReadFile(path);
    const json fixture = json::parse(file_text);
    const std::string document = FixtureDocumentText(file_text, fixture);
    StatusOr<Task> task = Task::FromJson(document);
    if (fixture.at("valid").get<bool>()) {
      ASSERT_TRUE(task.ok()) << task.status().ToString();
      EXPECT_TRUE(task->Validate().ok()) << task->Validate().ToString();
      // The whole document survives a round trip (compared as JSON values).
      auto again = Task::FromJson(task->ToJson());
      ASSERT_TRUE(again.ok()) << again.status().ToString();
      EXPECT_EQ(json::parse(again->ToJson()), json::parse(task->ToJson()));
    } else {
      ASSERT_FALSE(task.ok()) << "accepted an invalid document";
      const json& error = fixture.at("error");
      EXPECT_EQ(StatusCodeName(task.status().code()), error.at("code").get<std::string>());
      const std::string prefix = error.at("field").get<std::string>() + ": ";
      EXPECT_EQ(task.status().message().rfind(prefix, 0), 0u)
          << "message '" << task.status().message() << "' does not start with '" << prefix << "'";
    }
  }
}

// The same invalid documents fail the same way through FromJsonObject and Validate.
TEST(ContractFixtures, FromJsonObjectAgreesWithFromJson) {
  for (const auto& path : FixturePaths()) {
    SCOPED_TRACE(path.filename().string());
    const std::string file_text = ReadFile(path);
    const json fixture = json::parse(file_text);
    if (fixture.contains("document_text")) continue;
    const std::string document = FixtureDocumentText(file_text, fixture);
    StatusOr<Task> from_text = Task::FromJson(document);
    StatusOr<Task> from_object = Task::FromJsonObject(json::parse(document));
    ASSERT_EQ(from_text.ok(), from_object.ok());
    if (!from_text.ok()) {
      EXPECT_EQ(from_text.status().message(), from_object.status().message());
    }
  }
}

constexpr const char* kDocument =
    R"({"task_id":"t-1","namespace":"shop","task_type":"send_email",)"
    R"("payload": { "z": 1.10, "a": 12345678901234567890, "s": "\u00e9" } ,)"
    R"("max_retry":3,"delay_seconds":0,"created_at":1722489600,)"
    R"("priority":5,"x_new":{"b":[1,2],"a":null},"trace":{"traceparent":"00-ab-cd-01"}})";

TEST(TaskJson, PayloadTextIsKeptByteForByte) {
  auto task = Task::FromJson(kDocument);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->payload_json, R"({ "z": 1.10, "a": 12345678901234567890, "s": "\u00e9" })");
  EXPECT_NE(task->ToJson().find(R"("payload":{ "z": 1.10, "a": 12345678901234567890, )"),
            std::string::npos);
}

TEST(TaskJson, ExtraFieldsAreKeptAndWrittenBack) {
  auto task = Task::FromJson(kDocument);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->extra, json::parse(R"({"priority":5,"x_new":{"b":[1,2],"a":null},
                                          "trace":{"traceparent":"00-ab-cd-01"}})"));
  const json written = json::parse(task->ToJson());
  EXPECT_EQ(written["priority"], 5);
  EXPECT_EQ(written["x_new"], json::parse(R"({"b":[1,2],"a":null})"));
  EXPECT_EQ(written["trace"]["traceparent"], "00-ab-cd-01");
  EXPECT_EQ(written, task->ToJsonObject());
  EXPECT_EQ(written, json::parse(kDocument));
}

TEST(TaskJson, FieldsAreRead) {
  auto task =
      Task::FromJson(R"({"task_id":"x","namespace":"n","task_type":"t","payload":{},"max_retry":0,)"
                     R"("delay_seconds":60,"created_at":946684800,"execution_timeout":30})");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->task_id, "x");
  EXPECT_EQ(task->ns, "n");
  EXPECT_EQ(task->task_type, "t");
  EXPECT_EQ(task->payload_json, "{}");
  EXPECT_EQ(task->max_retry, 0);
  EXPECT_EQ(task->delay_seconds, 60);
  EXPECT_EQ(task->created_at, 946684800);
  EXPECT_EQ(task->execution_timeout, 30);
  EXPECT_TRUE(task->extra.empty());
  EXPECT_EQ(task->ToJson(),
            R"({"task_id":"x","namespace":"n","task_type":"t","payload":{},"max_retry":0,)"
            R"("delay_seconds":60,"created_at":946684800,"execution_timeout":30})");
}

TEST(TaskJson, DuplicatePayloadKeyTakesTheLastLikeTheParser) {
  auto task = Task::FromJson(
      R"({"payload":[1],"task_id":"x","namespace":"n","task_type":"t","max_retry":0,)"
      R"("delay_seconds":0,"created_at":946684800,"payload":{"second":true}})");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->payload_json, R"({"second":true})");
}

TEST(TaskJson, EscapedPayloadKeyIsFound) {
  auto task =
      Task::FromJson(R"({"task_id":"x","namespace":"n","task_type":"t","pay\u006coad":{"k": 1.50},)"
                     R"("max_retry":0,"delay_seconds":0,"created_at":946684800})");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->payload_json, R"({"k": 1.50})");
}

TEST(TaskJson, ErrorMessagesNameFieldRuleAndValue) {
  auto with = [](const std::string& field, const std::string& value) {
    json document =
        json::parse(R"({"task_id":"x","namespace":"n","task_type":"t","payload":{},"max_retry":0,)"
                    R"("delay_seconds":0,"created_at":946684800})");
    if (value.empty()) {
      document.erase(field);
    } else {
      document[field] = json::parse(value);
    }
    return Task::FromJson(document.dump()).status().message();
  };
  EXPECT_EQ(with("max_retry", "99"), "max_retry: must be an integer 0..25 (got 99)");
  EXPECT_EQ(with("task_id", ""), "task_id: required");
  EXPECT_EQ(with("created_at", "1722489600000"),
            "created_at: must be Unix seconds 946684800..4102444800 (got 1722489600000: "
            "milliseconds?)");
  EXPECT_EQ(with("payload", "[1]"), "payload: must be a JSON object (got array)");
  EXPECT_EQ(with("max_retry", R"("3")"), R"(max_retry: must be an integer 0..25 (got "3"))");
  EXPECT_EQ(
      with("namespace", R"("a b")"),
      R"(namespace: must be a string matching ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$ (got "a b"))");
  EXPECT_EQ(with("payload", R"({"blob":")" + std::string(600001, 'x') + R"("})"),
            "payload: must be at most 524288 bytes serialized (got 600012)");
  EXPECT_EQ(
      Task::FromJson("{\"task_id\":").status().message().rfind("document: not valid JSON: ", 0),
      0u);
  EXPECT_EQ(Task::FromJson("[1]").status().message(),
            "document: must be a JSON object (got array)");
  // A long value is shown briefly.
  EXPECT_LT(with("task_id", "\"" + std::string(500, 'a') + "\"").size(), 150u);
}

Task ValidTask() {
  Task task;
  task.task_id = "t-1";
  task.ns = "shop";
  task.task_type = "send_email";
  task.payload_json = R"({"to":"ada@example.com"})";
  task.created_at = 1722489600;
  return task;
}

TEST(TaskValidate, AcceptsAValidTask) { EXPECT_TRUE(ValidTask().Validate().ok()); }

TEST(TaskValidate, ChecksEveryMember) {
  struct Case {
    const char* field;
    void (*mutate)(Task&);
  };
  const Case cases[] = {
      {"task_id", [](Task& t) { t.task_id = ""; }},
      {"namespace", [](Task& t) { t.ns = "a{b}"; }},
      {"task_type", [](Task& t) { t.task_type = std::string(65, 't'); }},
      {"payload", [](Task& t) { t.payload_json = "[]"; }},
      {"payload", [](Task& t) { t.payload_json = "{\"a\":"; }},
      {"payload", [](Task& t) { t.payload_json = ""; }},
      {"max_retry", [](Task& t) { t.max_retry = 26; }},
      {"delay_seconds", [](Task& t) { t.delay_seconds = -1; }},
      {"created_at", [](Task& t) { t.created_at = 0; }},
      {"execution_timeout", [](Task& t) { t.execution_timeout = 0; }},
      {"extra", [](Task& t) { t.extra = json::array(); }},
      {"extra", [](Task& t) { t.extra["max_retry"] = 1; }},
      {"trace", [](Task& t) { t.extra["trace"] = "x"; }},
      {"headers.h",
       [](Task& t) {
         t.extra["headers"] = {{"h", 1}};
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    Task task = ValidTask();
    c.mutate(task);
    Status status = task.Validate();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message().rfind(std::string(c.field) + ": ", 0), 0u) << status.message();
  }
}

TEST(TaskValidate, InvalidPayloadTextSaysWhy) {
  Task task = ValidTask();
  task.payload_json = "{\"a\":";
  EXPECT_EQ(task.Validate().message().rfind("payload: not valid JSON: ", 0), 0u)
      << task.Validate().message();
  task.payload_json = "\"text\"";
  EXPECT_EQ(task.Validate().message(), "payload: must be a JSON object (got string)");
}

TEST(TaskNames, Patterns) {
  EXPECT_TRUE(IsValidName("a"));
  EXPECT_TRUE(IsValidName("Shop_1.eu-west"));
  EXPECT_TRUE(IsValidName(std::string(64, 'n')));
  EXPECT_FALSE(IsValidName(std::string(65, 'n')));
  EXPECT_FALSE(IsValidName(""));
  EXPECT_FALSE(IsValidName("-a"));
  EXPECT_FALSE(IsValidName("a:b"));
  EXPECT_FALSE(IsValidName("a b"));
  EXPECT_FALSE(IsValidName("a|b"));
  EXPECT_FALSE(IsValidName("a{b"));
  EXPECT_FALSE(IsValidName("\xc3\xa9t\xc3\xa9"));
  EXPECT_TRUE(IsValidTaskId("order:1.2_3-4"));
  EXPECT_TRUE(IsValidTaskId(std::string(128, 'i')));
  EXPECT_FALSE(IsValidTaskId(std::string(129, 'i')));
  EXPECT_FALSE(IsValidTaskId(":a"));
  EXPECT_FALSE(IsValidTaskId("a}"));
  EXPECT_FALSE(IsValidTaskId(std::string_view("a\0b", 3)));
}

// Found by the fuzzers (tests/fuzz): an extra field nested 100,000 deep overflowed the stack when
// FromJson copied it. It is refused, naming the member; a payload that deep stays text and is fine.
TEST(TaskFromJson, DeeplyNestedExtraFieldIsRefusedNotACrash) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string head =
      R"({"task_id":"t","namespace":"s","task_type":"m","max_retry":3,"delay_seconds":0,)"
      R"("created_at":1722489600,)";
  auto refused = Task::FromJson(head + R"("payload":{},"x":)" + deep + "}");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "extra: member \"x\" must not nest arrays and objects deeper than 255 levels");
  auto deep_payload = Task::FromJson(head + R"("payload":{"p":)" + deep + "}}");
  EXPECT_TRUE(deep_payload.ok()) << deep_payload.status().ToString();
  const std::string shallow = std::string(255, '[') + std::string(255, ']');
  EXPECT_TRUE(Task::FromJson(head + R"("payload":{},"x":)" + shallow + "}").ok());
}

TEST(JsonSpan, FindsTopLevelMembersOnly) {
  const std::string doc =
      R"( {"a": {"payload": 1}, "s": "x\"payload\":", "payload" : [ 1, {"}":"]"} ] , "n": -1.5e3 } )";
  EXPECT_EQ(internal::FindTopLevelMember(doc, "payload"), R"([ 1, {"}":"]"} ])");
  EXPECT_EQ(internal::FindTopLevelMember(doc, "n"), "-1.5e3");
  EXPECT_EQ(internal::FindTopLevelMember(doc, "s"), R"("x\"payload\":")");
  EXPECT_FALSE(internal::FindTopLevelMember(doc, "missing").has_value());
  EXPECT_FALSE(internal::FindTopLevelMember("[1]", "a").has_value());
  EXPECT_EQ(internal::FindTopLevelMember("\xEF\xBB\xBF{\"a\":true}", "a"), "true");
}

}  // namespace
}  // namespace baton
