#pragma once
// Shared by the worker's *_redistest programs: a real redis-server with the functions library, a
// producer Client, and readers for the keys a test asserts on.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "baton/client.h"
#include "baton/worker.h"
#include "core/keys.h"
#include "harness/redis_server.h"

namespace baton::testing {

// Polls `done` every 5 ms until it holds or `timeout` passes; returns its last value.
inline bool WaitUntil(const std::function<bool()>& done,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

class WorkerTest : public ::testing::Test {
 protected:
  static constexpr const char* kNs = "wt";

  void SetUp() override {
    redis_.LoadFunctions();
    ClientOptions options;
    options.redis_url = redis_.url();
    auto client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }

  // Small leases and short blocks keep the tests quick.
  WorkerOptions Options() const {
    WorkerOptions o;
    o.redis_url = redis_.url();
    o.lease = std::chrono::milliseconds(500);
    o.block = std::chrono::milliseconds(200);
    o.maintenance_interval = std::chrono::milliseconds(50);
    o.shutdown_grace = std::chrono::milliseconds(2000);
    return o;
  }

  static TypeOptions FastRetry(int concurrency = 0) {
    TypeOptions t;
    t.concurrency = concurrency;
    t.retry.base = std::chrono::milliseconds(50);
    t.retry.max = std::chrono::milliseconds(200);
    return t;
  }

  std::string Enqueue(const std::string& type, nlohmann::json payload, EnqueueOptions opts = {}) {
    TaskRequest req;
    req.ns = kNs;
    req.task_type = type;
    // `{}` converts to a JSON null, not an empty object.
    req.payload = payload.is_null() ? nlohmann::json::object() : std::move(payload);
    req.options = std::move(opts);
    auto r = client_->Enqueue(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->task_id : std::string();
  }

  internal::Keys keys() const { return internal::Keys(kNs); }
  bool IsDone(const std::string& id) { return redis_.Integer({"EXISTS", keys().Done(id)}) == 1; }
  nlohmann::json DoneMarker(const std::string& id) {
    return nlohmann::json::parse(redis_.String({"GET", keys().Done(id)}));
  }
  // The error history of a task (an empty array when there is none).
  nlohmann::json Errors(const std::string& id) {
    std::string text = redis_.String({"HGET", keys().Errors(), id});
    return text.empty() ? nlohmann::json::array() : nlohmann::json::parse(text);
  }
  bool IsDead(const std::string& type, const std::string& id) {
    return !redis_.String({"ZSCORE", keys().Dead(type), id}).empty();
  }
  long long StreamLength(const std::string& type) {
    return redis_.Integer({"XLEN", keys().Stream(type)});
  }
  // Entries pending (leased) in the group "baton" of a type's stream.
  long long Pending(const std::string& type) {
    auto r = redis_.Command({"XPENDING", keys().Stream(type), "baton"});
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) return 0;
    return r->element[0]->integer;
  }

  RedisServer redis_;
  std::unique_ptr<Client> client_;
};

}  // namespace baton::testing
