#pragma once
// Shared by the inspector's *_redistest programs: a real redis-server with the functions library,
// a producer Client, an Inspector, and the worker-side transitions (dequeue, ack, fail) called
// through the fn:: builders (broker/functions.h), so each test can build one precise situation.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "baton/client.h"
#include "baton/inspector.h"
#include "broker/functions.h"
#include "broker/keys.h"
#include "broker/redis_connection.h"
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
    client_options.redis.url = redis_.url();
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

  // Generous thresholds, so that a loaded machine cannot turn a live consumer into a dead one.
  InspectorOptions Options() const {
    InspectorOptions o;
    o.redis.url = redis_.url();
    o.live_consumer_window = std::chrono::milliseconds(60000);
    o.overdue_grace = std::chrono::milliseconds(500);
    return o;
  }

  // Short thresholds for the tests that wait them out: consumers live for 2 s.
  InspectorOptions ShortThresholds() const {
    InspectorOptions o = Options();
    o.live_consumer_window = std::chrono::milliseconds(2000);
    return o;
  }

  // The lease of Dequeue: long, so that no test sees an expiry it did not ask for.
  static constexpr std::int64_t kLongLeaseMs = 600000;
  // The shortest lease the functions accept, for the tests that wait it out.
  static constexpr std::int64_t kShortLeaseMs = 1000;

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

  // baton_v2_dequeue: up to `count` entries to `consumer` of `group` (created at 0 if missing),
  // leased for `lease_ms`.
  std::vector<Delivered> Dequeue(const std::string& type, const std::string& group,
                                 const std::string& consumer, int count,
                                 std::int64_t lease_ms = kLongLeaseMs) {
    internal::Reply r = Call(internal::fn::Dequeue(kNs, type, group, consumer,
                                                   static_cast<std::size_t>(count), lease_ms));
    std::vector<Delivered> out;
    if (!r.is_array() || r.elements.empty()) return out;
    const auto& flat = r.elements[0].elements;
    for (std::size_t i = 0; i + 8 < flat.size(); i += 9) {
      out.push_back({flat[i].AsString(), flat[i + 1].AsString()});
    }
    return out;
  }

  // baton_v2_ack of one task; expects "done".
  void Ack(const std::string& type, const std::string& group, const Delivered& d,
           const std::string& consumer = "c1") {
    const internal::fn::HeldTask held[] = {{d.id, d.sid}};
    internal::Reply r = Call(internal::fn::Ack(kNs, type, group, consumer, held));
    ASSERT_TRUE(r.is_array());
    ASSERT_EQ(r.elements.size(), 1u);
    EXPECT_EQ(r.elements[0].AsString(), "done");
  }

  // baton_v2_fail; returns "retry" or "dead".
  std::string Fail(const std::string& type, const std::string& group, const Delivered& d,
                   const std::string& error, const std::string& kind = "error",
                   const std::string& consumer = "c1", std::int64_t base_ms = 60000) {
    internal::fn::FailArgs args;
    args.group = group;
    args.consumer = consumer;
    args.id = d.id;
    args.sid = d.sid;
    args.kind = kind;
    args.message = error;
    args.stack = "at handler()\nat main()";
    args.base_ms = base_ms;
    args.max_ms = 600000;
    internal::Reply r = Call(internal::fn::Fail(kNs, type, args));
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
