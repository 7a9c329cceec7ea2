#pragma once
// Shared by the inspector's *_redistest programs: a real redis-server with the functions library,
// a producer Client, an Inspector, and the worker-side transitions (dequeue, ack, fail) called with
// FCALL exactly as docs/protocol.md describes them, so each test can build one precise situation.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "baton/client.h"
#include "baton/inspector.h"
#include "broker/redis_connection.h"
#include "core/keys.h"
#include "harness/redis_server.h"

namespace baton::testing {

struct Delivered {
  std::string sid;
  std::string id;
};

class InspectTest : public ::testing::Test {
 protected:
  static constexpr const char* kNs = "it";

  void SetUp() override {
    redis_.LoadFunctions();
    ClientOptions client_options;
    client_options.redis_url = redis_.url();
    auto client = Client::Connect(client_options);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
    auto endpoint = internal::RedisEndpoint::Parse(redis_.url());
    ASSERT_TRUE(endpoint.ok());
    auto conn = internal::RedisConnection::Open(*endpoint);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    conn_ = std::move(*conn);
    Reconnect(Options());
  }

  // Generous thresholds, so that a loaded machine cannot turn "active" into "stuck".
  InspectorOptions Options() const {
    InspectorOptions o;
    o.redis_url = redis_.url();
    o.lease = std::chrono::milliseconds(60000);
    o.live_consumer_window = std::chrono::milliseconds(60000);
    o.overdue_grace = std::chrono::milliseconds(500);
    return o;
  }

  // Short thresholds for the tests that wait them out: a 1 s lease, consumers live for 2 s.
  InspectorOptions ShortThresholds() const {
    InspectorOptions o = Options();
    o.lease = std::chrono::milliseconds(1000);
    o.live_consumer_window = std::chrono::milliseconds(2000);
    return o;
  }

  void Reconnect(const InspectorOptions& options) {
    auto inspector = Inspector::Connect(options);
    ASSERT_TRUE(inspector.ok()) << inspector.status().ToString();
    inspector_ = std::move(*inspector);
  }

  std::string Enqueue(const std::string& type, const std::string& payload = "{}",
                      EnqueueOptions options = {}, const std::string& ns = kNs) {
    TaskRequest request;
    request.ns = ns;
    request.task_type = type;
    request.payload = nlohmann::json::parse(payload);
    request.options = std::move(options);
    auto result = client_->Enqueue(request);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? result->task_id : "";
  }

  internal::Reply Call(const std::vector<std::string>& argv) {
    auto reply = conn_->Command(argv);
    EXPECT_TRUE(reply.ok()) << reply.status().ToString();
    if (!reply.ok()) return {};
    EXPECT_FALSE(reply->is_error()) << reply->str;
    return *reply;
  }

  // FCALL baton_dequeue: up to `count` entries to `consumer` of `group` (created at 0 if missing).
  std::vector<Delivered> Dequeue(const std::string& type, const std::string& group,
                                 const std::string& consumer, int count) {
    internal::Keys k(kNs);
    internal::Reply r =
        Call({"FCALL", "baton_dequeue", "6", k.Stream(type), k.Tasks(), k.Events(), k.Bodies(),
              k.Errors(), k.Dead(type), group, consumer, std::to_string(count), "100000"});
    std::vector<Delivered> out;
    if (!r.is_array() || r.elements.empty()) return out;
    const auto& flat = r.elements[0].elements;
    for (std::size_t i = 0; i + 8 < flat.size(); i += 9) {
      out.push_back({flat[i].AsString(), flat[i + 1].AsString()});
    }
    return out;
  }

  void Ack(const std::string& type, const std::string& group, const Delivered& d,
           const std::string& consumer = "c1") {
    internal::Keys k(kNs);
    internal::Reply r = Call({"FCALL", "baton_ack", "7", k.Stream(type), k.Scheduled(type),
                              k.Tasks(), k.Events(), k.Errors(), k.Bodies(), k.Done(d.id), group,
                              "86400", "100000", "1", d.id, d.sid, consumer});
    ASSERT_TRUE(r.is_array());
    EXPECT_EQ(r.elements[0].AsString(), "done");
  }

  // FCALL baton_fail; returns "retry" or "dead".
  std::string Fail(const std::string& type, const std::string& group, const Delivered& d,
                   const std::string& error, const std::string& kind = "error",
                   const std::string& consumer = "c1", std::int64_t base_ms = 60000) {
    internal::Keys k(kNs);
    internal::Reply r = Call({"FCALL",
                              "baton_fail",
                              "7",
                              k.Stream(type),
                              k.Scheduled(type),
                              k.Dead(type),
                              k.Tasks(),
                              k.Bodies(),
                              k.Errors(),
                              k.Events(),
                              group,
                              d.id,
                              d.sid,
                              consumer,
                              kind,
                              error,
                              "at handler()\nat main()",
                              std::to_string(base_ms),
                              "600000",
                              "0",
                              "100000"});
    return r.is_array() && !r.elements.empty() ? r.elements[0].AsString() : "";
  }

  // Enqueues a task with max_retry 0 and fails it once: it is dead.
  std::string MakeDead(const std::string& type, const std::string& error,
                       const std::string& payload = "{\"n\":1}") {
    EnqueueOptions options;
    options.max_retry = 0;
    std::string id = Enqueue(type, payload, options);
    auto delivered = Dequeue(type, "g", "c1", 1);
    EXPECT_EQ(delivered.size(), 1u);
    if (delivered.empty()) return id;
    EXPECT_EQ(delivered[0].id, id);
    EXPECT_EQ(Fail(type, "g", delivered[0], error), "dead");
    return id;
  }

  static void Sleep(std::chrono::milliseconds ms) { std::this_thread::sleep_for(ms); }

  internal::Keys keys() const { return internal::Keys(kNs); }

  RedisServer redis_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<internal::RedisConnection> conn_;
  std::unique_ptr<Inspector> inspector_;
};

}  // namespace baton::testing
