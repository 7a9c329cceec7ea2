// baton::Client against a real redis-server with the functions library loaded.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "baton/client.h"
#include "broker/functions.h"
#include "broker/keys.h"
#include "harness/redis_server.h"
#include "harness/work_entry.h"

namespace baton {
namespace {

using internal::Keys;
using namespace std::chrono_literals;

// Unix ms on the Redis server's clock.
std::int64_t RedisNowMs(testing::RedisServer& server) {
  auto reply = server.Command({"TIME"});
  return std::stoll(reply->element[0]->str) * 1000 + std::stoll(reply->element[1]->str) / 1000;
}

// Field `name` of the stream entry with id `sid`: a raw field (task, payload) or a part of its
// task field (id, max_retry, ..., attempt, extra; harness/work_entry.h).
std::string EntryField(testing::RedisServer& server, const std::string& stream,
                       const std::string& sid, const std::string& name) {
  auto reply = server.Command({"XRANGE", stream, sid, sid});
  if (reply->elements != 1) return "<no entry " + sid + ">";
  auto fields = testing::WorkEntryFields(reply->element[0]->element[1]);
  auto it = fields.find(name);
  return it == fields.end() ? "<no field " + name + ">" : it->second;
}

// The field names of the stream entry with id `sid`, in order.
std::vector<std::string> EntryFieldNames(testing::RedisServer& server, const std::string& stream,
                                         const std::string& sid) {
  std::vector<std::string> names;
  auto reply = server.Command({"XRANGE", stream, sid, sid});
  if (reply->elements != 1) return names;
  const redisReply* fields = reply->element[0]->element[1];
  for (std::size_t i = 0; i + 1 < fields->elements; i += 2)
    names.push_back(fields->element[i]->str);
  return names;
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.LoadFunctions();
    ClientOptions options;
    options.redis.url = server_.url();
    auto client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
  }

  static TaskRequest Request(std::string ns, std::string type,
                             nlohmann::json payload = {{"k", 1}}) {
    TaskRequest request;
    request.ns = std::move(ns);
    request.task_type = std::move(type);
    request.payload = std::move(payload);
    return request;
  }

  testing::RedisServer server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientTest, EnqueueImmediate) {
  TaskRequest request = Request("shop", "send_email", {{"to", "ada@example.com"}});
  request.options.max_retry = 5;
  request.options.execution_timeout = 30;
  request.options.extra["headers"] = {{"producer", "test"}};
  auto result = client_->Enqueue(request);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->outcome, EnqueueOutcome::kQueued);
  EXPECT_TRUE(IsValidTaskId(result->task_id));
  EXPECT_EQ(result->task_id.size(), 36u);  // a UUIDv7
  ASSERT_FALSE(result->stream_id.empty());

  const Keys keys("shop");
  const std::string stream = keys.Stream("send_email");
  EXPECT_EQ(server_.Integer({"XLEN", stream}), 1);
  EXPECT_EQ(EntryFieldNames(server_, stream, result->stream_id),
            (std::vector<std::string>{"task", "payload"}));
  EXPECT_EQ(EntryField(server_, stream, result->stream_id, "id"), result->task_id);
  EXPECT_EQ(EntryField(server_, stream, result->stream_id, "payload"),
            R"({"to":"ada@example.com"})");
  EXPECT_EQ(EntryField(server_, stream, result->stream_id, "max_retry"), "5");
  EXPECT_EQ(EntryField(server_, stream, result->stream_id, "execution_timeout"), "30");
  EXPECT_EQ(EntryField(server_, stream, result->stream_id, "extra"),
            R"({"headers":{"producer":"test"}})");
  EXPECT_EQ(EntryField(server_, stream, result->stream_id, "attempt"), "0");
  const std::int64_t created_at =
      std::stoll(EntryField(server_, stream, result->stream_id, "created_at"));
  EXPECT_NEAR(static_cast<double>(created_at), static_cast<double>(RedisNowMs(server_) / 1000), 60);
  EXPECT_EQ(EntryField(server_, stream, result->stream_id, "task"),
            testing::WorkEntryTask(result->task_id, "5", "0", std::to_string(created_at), "30", "0",
                                   R"({"headers":{"producer":"test"}})"));
  EXPECT_EQ(server_.String({"HGET", keys.Tasks(), result->task_id}),
            "queued|send_email|0|" + result->stream_id);
  EXPECT_EQ(server_.Integer({"SISMEMBER", std::string(Keys::kNamespaces), "shop"}), 1);
  EXPECT_EQ(server_.Integer({"XLEN", keys.Events()}), 1);
}

TEST_F(ClientTest, EnqueueDelayed) {
  TaskRequest request = Request("shop", "report");
  request.options.delay_seconds = 120;
  const std::int64_t before = RedisNowMs(server_);
  auto result = client_->Enqueue(request);
  const std::int64_t after = RedisNowMs(server_);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->outcome, EnqueueOutcome::kScheduled);
  EXPECT_GE(result->due_ms, before + 120000);
  EXPECT_LE(result->due_ms, after + 120000);
  const Keys keys("shop");
  EXPECT_EQ(server_.String({"ZSCORE", keys.Scheduled("report"), result->task_id}),
            std::to_string(result->due_ms));
  EXPECT_EQ(server_.Integer({"EXISTS", keys.Stream("report")}), 0);
  EXPECT_EQ(server_.String({"HGET", keys.Tasks(), result->task_id}), "scheduled|report|0|");
}

TEST_F(ClientTest, EnqueueAtAbsoluteTime) {
  TaskRequest request = Request("shop", "report");
  request.options.delay_seconds = 5;  // recorded, but run_at decides
  const auto run_at = std::chrono::system_clock::now() + 1h;
  request.options.run_at = run_at;
  auto result = client_->Enqueue(request);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->outcome, EnqueueOutcome::kScheduled);
  EXPECT_EQ(
      result->due_ms,
      std::chrono::duration_cast<std::chrono::milliseconds>(run_at.time_since_epoch()).count());
}

TEST_F(ClientTest, BatchAcrossTypesAndNamespacesKeepsRequestOrder) {
  std::vector<TaskRequest> requests = {
      Request("shop", "mail", {{"i", 0}}),       Request("billing", "mail", {{"i", 1}}),
      Request("shop", "invoice", {{"i", 2}}),    Request("shop", "mail", {{"i", 3}}),
      Request("billing", "invoice", {{"i", 4}}),
  };
  requests[2].options.delay_seconds = 60;
  auto results = client_->EnqueueMany(requests);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  ASSERT_EQ(results->size(), requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE(i);
    const EnqueueResult& result = (*results)[i];
    const Keys keys(requests[i].ns);
    if (i == 2) {
      EXPECT_EQ(result.outcome, EnqueueOutcome::kScheduled);
      EXPECT_EQ(server_.String({"HGET", keys.Bodies(), result.task_id}).find(R"(\"i\":2)") !=
                    std::string::npos,
                true);
      continue;
    }
    ASSERT_EQ(result.outcome, EnqueueOutcome::kQueued);
    const std::string stream = keys.Stream(requests[i].task_type);
    EXPECT_EQ(EntryField(server_, stream, result.stream_id, "id"), result.task_id);
    EXPECT_EQ(EntryField(server_, stream, result.stream_id, "payload"),
              "{\"i\":" + std::to_string(i) + "}");
  }
  EXPECT_EQ(server_.Integer({"XLEN", Keys("shop").Stream("mail")}), 2);
  EXPECT_EQ(server_.Integer({"XLEN", Keys("billing").Stream("mail")}), 1);
  EXPECT_EQ(server_.Integer({"XLEN", Keys("billing").Stream("invoice")}), 1);
  EXPECT_EQ(server_.Integer({"SCARD", std::string(Keys::kNamespaces)}), 2);
  EXPECT_EQ(server_.Integer({"SISMEMBER", Keys("shop").Types(), "invoice"}), 1);
}

TEST_F(ClientTest, LargeBatchIsSplitIntoCalls) {
  std::vector<TaskRequest> requests;
  for (int i = 0; i < 700; ++i) requests.push_back(Request("shop", "bulk", {{"i", i}}));
  auto results = client_->EnqueueMany(requests);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  ASSERT_EQ(results->size(), 700u);
  for (const EnqueueResult& result : *results) ASSERT_EQ(result.outcome, EnqueueOutcome::kQueued);
  EXPECT_LT((*results)[0].stream_id, (*results)[699].stream_id);
  EXPECT_EQ(server_.Integer({"XLEN", Keys("shop").Stream("bulk")}), 700);
  EXPECT_EQ(server_.Integer({"HLEN", Keys("shop").Tasks()}), 700);
}

TEST_F(ClientTest, DuplicateIdWritesNothing) {
  TaskRequest request = Request("shop", "mail");
  request.options.task_id = "order-1001";
  auto first = client_->Enqueue(request);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->outcome, EnqueueOutcome::kQueued);
  EXPECT_EQ(first->task_id, "order-1001");
  auto second = client_->Enqueue(request);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->outcome, EnqueueOutcome::kDuplicate);
  EXPECT_EQ(second->detail, "queued");
  EXPECT_EQ(server_.Integer({"XLEN", Keys("shop").Stream("mail")}), 1);
}

TEST_F(ClientTest, UniqueKeyConflict) {
  TaskRequest request = Request("shop", "mail");
  request.options.unique_key = "welcome:ada";
  request.options.unique_ttl = 3600s;
  auto first = client_->Enqueue(request);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->outcome, EnqueueOutcome::kQueued);
  auto second = client_->Enqueue(request);  // a new task id, the same key
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->outcome, EnqueueOutcome::kUniqueConflict);
  EXPECT_EQ(second->detail, first->task_id);
  const std::string unique_key = Keys("shop").Unique("welcome:ada");
  EXPECT_EQ(server_.String({"GET", unique_key}), first->task_id);
  EXPECT_GT(server_.Integer({"TTL", unique_key}), 3000);
}

TEST_F(ClientTest, InvalidInputNamesTheFieldAndWritesNothing) {
  std::vector<TaskRequest> requests = {Request("shop", "mail"), Request("shop", "mail"),
                                       Request("other", "mail")};
  requests[1].options.max_retry = 99;
  auto results = client_->EnqueueMany(requests);
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(results.status().message(),
            "enqueue: requests[1]: max_retry: must be an integer 0..25 (got 99)");

  auto single = client_->Enqueue(Request("shop", "mail", nlohmann::json::array({1, 2})));
  ASSERT_FALSE(single.ok());
  EXPECT_EQ(single.status().message(), "enqueue: payload: must be a JSON object (got array)");

  TaskRequest bad_name = Request("sh op", "mail");
  EXPECT_NE(client_->Enqueue(bad_name).status().message().find("namespace: "), std::string::npos);
  TaskRequest bad_unique = Request("shop", "mail");
  bad_unique.options.unique_key = "k";
  EXPECT_NE(client_->Enqueue(bad_unique).status().message().find("unique_ttl: "),
            std::string::npos);

  // Only the functions library is in Redis: no task, no namespace, no event.
  EXPECT_EQ(server_.Integer({"DBSIZE"}), 0);
}

TEST_F(ClientTest, EnqueueTaskKeepsPayloadBytes) {
  auto task = Task::FromJson(
      R"({"task_id":"t-7","namespace":"shop","task_type":"mail","payload":{"n": 1.10, )"
      R"("big": 123456789012345678901234567890},"max_retry":1,"delay_seconds":0,)"
      R"("created_at":1722489600,"x_future":true})");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  auto result = client_->EnqueueTask(*task);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  const std::string stream = Keys("shop").Stream("mail");
  EXPECT_EQ(EntryField(server_, stream, result->stream_id, "payload"),
            R"({"n": 1.10, "big": 123456789012345678901234567890})");
  EXPECT_EQ(EntryField(server_, stream, result->stream_id, "extra"), R"({"x_future":true})");
  EXPECT_EQ(EntryField(server_, stream, result->stream_id, "created_at"), "1722489600");

  Task invalid = *task;
  invalid.created_at = 1722489600000;
  EXPECT_EQ(client_->EnqueueTask(invalid).status().message(),
            "enqueue: created_at: must be Unix seconds 946684800..4102444800 (got 1722489600000: "
            "milliseconds?)");
}

TEST_F(ClientTest, EnqueueTaskRefusesOptionsItCannotApply) {
  auto task = Client::BuildTask(Request("shop", "mail"));
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EnqueueOptions retries;
  retries.max_retry = 9;  // the document says 3: silently keeping either would mislead
  EXPECT_EQ(client_->EnqueueTask(*task, retries).status().message(),
            "enqueue: scheduling.max_retry: must be left unset: EnqueueTask takes it from the "
            "task document");
  EnqueueOptions id;
  id.task_id = "other";
  EXPECT_EQ(client_->EnqueueTask(*task, id).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(server_.Integer({"EXISTS", Keys("shop").Stream("mail")}), 0);  // nothing written
  EnqueueOptions scheduling;  // what EnqueueTask does apply
  scheduling.unique_key = "k";
  scheduling.unique_ttl = std::chrono::seconds(60);
  auto result = client_->EnqueueTask(*task, scheduling);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->outcome, EnqueueOutcome::kQueued);
}

TEST_F(ClientTest, PayloadJsonIsSentByteForByte) {
  TaskRequest request = Request("shop", "mail");
  request.payload_json = R"({"n": 1.10, "big": 123456789012345678901234567890, "z": -0})";
  std::vector<TaskRequest> requests = {request, Request("shop", "mail")};
  requests[1].payload_json = "[1]";
  // Validated like any payload: the whole batch is refused, nothing written.
  auto refused = client_->EnqueueMany(requests);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "enqueue: requests[1]: payload: must be a JSON object (got array)");
  auto result = client_->Enqueue(request);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(EntryField(server_, Keys("shop").Stream("mail"), result->stream_id, "payload"),
            *request.payload_json);
}

TEST_F(ClientTest, CancelQueuedScheduledAndUnknown) {
  auto queued = client_->Enqueue(Request("shop", "mail"));
  ASSERT_TRUE(queued.ok()) << queued.status().ToString();
  TaskRequest later = Request("shop", "report");
  later.options.delay_seconds = 600;
  auto scheduled = client_->Enqueue(later);
  ASSERT_TRUE(scheduled.ok()) << scheduled.status().ToString();

  const Keys keys("shop");
  ASSERT_TRUE(client_->Cancel("shop", queued->task_id).ok());
  EXPECT_EQ(server_.Integer({"XLEN", keys.Stream("mail")}), 0);
  EXPECT_EQ(server_.Integer({"HEXISTS", keys.Tasks(), queued->task_id}), 0);
  EXPECT_NE(server_.Command({"ZSCORE", keys.Done(), queued->task_id})->type, REDIS_REPLY_NIL);
  EXPECT_EQ(server_.String({"HGET", keys.Ended(), queued->task_id}).rfind("cancelled|mail|", 0),
            0u);

  ASSERT_TRUE(client_->Cancel("shop", scheduled->task_id).ok());
  EXPECT_EQ(server_.Integer({"ZCARD", keys.Scheduled("report")}), 0);

  Status again = client_->Cancel("shop", queued->task_id);
  EXPECT_EQ(again.code(), StatusCode::kNotFound);
  Status unknown = client_->Cancel("shop", "no-such-task");
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.message().find("no-such-task"), std::string::npos);
  EXPECT_EQ(client_->Cancel("shop", "bad id").code(), StatusCode::kInvalidArgument);
}

TEST_F(ClientTest, CancelActiveIsAConflict) {
  auto queued = client_->Enqueue(Request("shop", "mail"));
  ASSERT_TRUE(queued.ok()) << queued.status().ToString();
  const Keys keys("shop");
  auto delivered = server_.Command(internal::fn::Dequeue("shop", "mail", "workers", "w1", 10, 0));
  ASSERT_EQ(delivered->type, REDIS_REPLY_ARRAY);
  Status status = client_->Cancel("shop", queued->task_id);
  EXPECT_EQ(status.code(), StatusCode::kConflict) << status.ToString();
}

TEST(ClientConnect, VersionMismatchWithoutLibrary) {
  testing::RedisServer server;
  ClientOptions options;
  options.redis.url = server.url();
  auto client = Client::Connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kVersionMismatch);
  EXPECT_EQ(client.status().message(),
            "connect: functions library version none loaded in Redis, this client needs 2: run "
            "'baton init'");
}

TEST(ClientConnect, VersionMismatchWithAnotherVersion) {
  testing::RedisServer server;
  server.Command({"FUNCTION", "LOAD",
                  "#!lua name=baton_v2\nredis.register_function{function_name='baton_v2_version', "
                  "callback=function() return '0' end, flags={'no-writes'}}\n"});
  ClientOptions options;
  options.redis.url = server.url();
  auto client = Client::Connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kVersionMismatch);
  EXPECT_NE(client.status().message().find("version 0 loaded in Redis"), std::string::npos);
}

TEST(ClientConnect, UnreachableAndBadUrl) {
  ClientOptions options;
  options.redis.url = "redis://127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  options.redis.timeout = 1000ms;
  EXPECT_EQ(Client::Connect(options).status().code(), StatusCode::kUnavailable);
  options.redis.url = "http://localhost";
  EXPECT_EQ(Client::Connect(options).status().code(), StatusCode::kInvalidArgument);
}

TEST(ClientConnect, EventsCanBeTurnedOffPerNamespace) {
  testing::RedisServer server;
  server.LoadFunctions();
  ClientOptions options;
  options.redis.url = server.url();
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto settings = (*client)->ConfigureNamespace("quiet", {{"events_maxlen", "0"}});
  ASSERT_TRUE(settings.ok()) << settings.status().ToString();
  EXPECT_EQ(settings->events_maxlen, 0);
  EXPECT_EQ(settings->lease_ms, 30000);
  TaskRequest request;
  request.ns = "quiet";
  request.task_type = "t";
  ASSERT_TRUE((*client)->Enqueue(request).ok());
  EXPECT_EQ(server.Integer({"EXISTS", Keys("quiet").Events()}), 0);
  EXPECT_EQ(server.Integer({"XLEN", Keys("quiet").Stream("t")}), 1);
  // Another namespace keeps its events.
  request.ns = "loud";
  ASSERT_TRUE((*client)->Enqueue(request).ok());
  EXPECT_EQ(server.Integer({"XLEN", Keys("loud").Events()}), 1);
}

TEST(ClientConnect, ConfigureNamespaceNamesTheSettingAndItsRange) {
  testing::RedisServer server;
  server.LoadFunctions();
  ClientOptions options;
  options.redis.url = server.url();
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto bad = (*client)->ConfigureNamespace("shop", {{"lease_ms", "5"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "configure: lease_ms: must be an integer 1000..86400000");
  auto unknown = (*client)->ConfigureNamespace("shop", {{"colour", "1"}});
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  auto set = (*client)->ConfigureNamespace("shop", {{"dlq_max", "7"}});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->dlq_max, 7);
  auto back = (*client)->ConfigureNamespace("shop", {{"dlq_max", ""}});
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->dlq_max, 100000);
}

TEST(ClientConnect, ReconnectsAfterTheConnectionBroke) {
  testing::RedisServer server;
  server.LoadFunctions();
  ClientOptions options;
  options.redis.url = server.url();
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  // Drop every client connection except the harness' own; the next call reconnects.
  server.Command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  TaskRequest request;
  request.ns = "shop";
  request.task_type = "t";
  auto lost = (*client)->Enqueue(request);
  EXPECT_EQ(lost.status().code(), StatusCode::kUnavailable);
  auto result = (*client)->Enqueue(request);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->outcome, EnqueueOutcome::kQueued);
}

TEST_F(ClientTest, WaitReplicasReportsATaskWrittenButNotReplicated) {
  // A primary with one replica: WAIT 1 is met. Without it (the replica gone), the enqueue says
  // how many replicas acknowledged, and the task is still written.
  testing::RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(server_.port())});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (server_.String({"INFO", "replication"}).find("state=online") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ClientOptions options;
  options.redis.url = server_.url();
  options.wait_replicas = 1;
  options.wait_timeout = std::chrono::milliseconds(2000);
  auto durable = Client::Connect(options);
  ASSERT_TRUE(durable.ok()) << durable.status().ToString();
  auto met = (*durable)->Enqueue(Request("shop", "send_email"));
  ASSERT_TRUE(met.ok()) << met.status().ToString();
  EXPECT_EQ(replica.Integer({"HEXISTS", Keys("shop").Tasks(), met->task_id}), 1);  // replicated

  replica.Kill();
  options.wait_timeout = std::chrono::milliseconds(100);
  durable = Client::Connect(options);
  ASSERT_TRUE(durable.ok());
  TaskRequest request = Request("shop", "send_email");
  request.options.task_id = "not-replicated";
  auto missed = (*durable)->Enqueue(request);
  ASSERT_FALSE(missed.ok());
  EXPECT_EQ(missed.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(missed.status().message(),
            "enqueue: 1 shop/send_email task(s) written on the primary but acknowledged by only 0 "
            "of 1 replicas within 100 ms; it may still run, but is not known to survive a "
            "failover");
  EXPECT_EQ(server_.Integer({"HEXISTS", Keys("shop").Tasks(), "not-replicated"}), 1);
}

TEST(ClientOptionsTest, WaitReplicasSettingsAreChecked) {
  ClientOptions options;
  options.redis.url = "redis://127.0.0.1:1";
  options.wait_replicas = -1;
  auto client = Client::Connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().message(), "wait_replicas: must be 0 (no WAIT) or more");
  options.wait_replicas = 1;
  options.wait_timeout = std::chrono::milliseconds(0);
  client = Client::Connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().message(),
            "wait_timeout: must be at least 1 ms when wait_replicas > 0");
}

}  // namespace
}  // namespace baton
