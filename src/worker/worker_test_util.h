#pragma once
// Shared by the worker's *_redistest programs: a real redis-server with the functions library, a
// producer Client, and readers for the keys a test asserts on.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "baton/client.h"
#include "baton/worker.h"
#include "broker/keys.h"
#include "harness/redis_server.h"
#include "harness/work_entry.h"

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
    options.redis.url = redis_.url();
    auto client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }

  // Short blocks keep the tests quick. No batond runs in these tests: the worker's own
  // maintenance promotes retries and delayed tasks and reclaims expired leases (tests about the
  // worker without it turn it off).
  WorkerOptions Options() const {
    WorkerOptions o;
    o.redis.url = redis_.url();
    o.block = std::chrono::milliseconds(200);
    o.maintenance = true;
    o.shutdown_grace = std::chrono::milliseconds(2000);
    return o;
  }

  // Short retry delays; lease_ms 0 is the namespace's lease (30 s unless configured).
  static TypeOptions FastRetry(int concurrency = 0, std::int64_t lease_ms = 0) {
    TypeOptions t;
    t.concurrency = concurrency;
    t.retry.base = std::chrono::milliseconds(50);
    t.retry.max = std::chrono::milliseconds(200);
    t.lease_ms = lease_ms;
    return t;
  }

  // A handler that counts its runs in `runs` and succeeds.
  static Handler CountRuns(std::atomic<int>* runs) {
    return [runs](TaskContext&) {
      ++*runs;
      return Status::Ok();
    };
  }

  // Writes a first-run task of `type` as baton_v2_enqueue would (its stream entry and its queued
  // record), without calling the functions (e.g. while the library is gone); returns its SID.
  std::string AddQueuedByHand(const std::string& type, const std::string& id,
                              const std::string& payload) {
    std::string sid = redis_.String(
        {"XADD", keys().Stream(type), "*", "task",
         testing::WorkEntryTask(id, "3", "0", "1722489600", "", "0", ""), "payload", payload});
    redis_.Command({"HSET", keys().Tasks(), id, "queued|" + type + "|0|" + sid});
    return sid;
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
  // The final state of a task: "" while it is live, else "done" or the state `ended` records
  // (cancelled, deleted, dropped).
  std::string FinalState(const std::string& id) {
    if (redis_.String({"ZSCORE", keys().Done(), id}).empty()) return "";
    std::string ended = redis_.String({"HGET", keys().Ended(), id});
    return ended.empty() ? "done" : ended.substr(0, ended.find('|'));
  }
  bool IsDone(const std::string& id) { return FinalState(id) == "done"; }

  // The namespace's events stream, one field -> value map per entry, oldest first.
  std::vector<std::map<std::string, std::string>> Events() {
    std::vector<std::map<std::string, std::string>> out;
    auto r = redis_.Command({"XRANGE", keys().Events(), "-", "+"});
    for (std::size_t i = 0; i < r->elements; ++i) {
      const redisReply* fields = r->element[i]->element[1];
      std::map<std::string, std::string> entry;
      for (std::size_t f = 0; f + 1 < fields->elements; f += 2) {
        entry[fields->element[f]->str] = fields->element[f + 1]->str;
      }
      out.push_back(std::move(entry));
    }
    return out;
  }
  // Who finished a done task and after how many attempts, as its `-> done` event says.
  struct Finish {
    std::string worker;
    int attempts = 0;
  };
  std::optional<Finish> DoneBy(const std::string& id) {
    for (const auto& e : Events()) {
      if (e.count("to") == 0 || e.at("to") != "done") continue;
      std::istringstream ids(e.at("ids"));
      std::istringstream attempts(e.at("attempts"));
      std::string one;
      int n = 0;
      while (ids >> one && attempts >> n) {
        if (one == id) return Finish{e.at("worker"), n};
      }
    }
    return std::nullopt;
  }
  // When a task's lease ends (Unix ms, Redis' clock), -1 when it holds no lease (not pending in
  // the group "baton"): its entry's delivery time in the group (reset by every heartbeat) plus
  // the lease length its consumer stored in leases:TYPE (else the namespace's lease_ms, else the
  // 30 s default).
  long long LeaseDeadline(const std::string& type, const std::string& id) {
    const std::string record = redis_.String({"HGET", keys().Tasks(), id});  // STATE|TYPE|N|SID
    if (record.rfind("queued|", 0) != 0) return -1;
    const std::string sid = record.substr(record.rfind('|') + 1);
    // TIME and XPENDING in one transaction: the idle time is measured at that same instant.
    redis_.Command({"MULTI"});
    redis_.Command({"TIME"});
    redis_.Command({"XPENDING", keys().Stream(type), "baton", sid, sid, "1"});
    auto exec = redis_.Command({"EXEC"});
    if (exec->type != REDIS_REPLY_ARRAY || exec->elements != 2) return -1;
    const redisReply* time = exec->element[0];
    const redisReply* pending = exec->element[1];
    if (pending->type != REDIS_REPLY_ARRAY || pending->elements == 0) return -1;
    const long long now =
        std::stoll(time->element[0]->str) * 1000 + std::stoll(time->element[1]->str) / 1000;
    const std::string consumer = pending->element[0]->element[1]->str;
    const long long idle = pending->element[0]->element[2]->integer;
    long long lease = 30000;
    for (const std::string& text : {redis_.String({"HGET", keys().Leases(type), consumer}),
                                    redis_.String({"HGET", keys().Config(), "lease_ms"})}) {
      if (!text.empty() && std::stoll(text) >= 1000 && std::stoll(text) <= 86400000) {
        lease = std::stoll(text);
        break;
      }
    }
    return now - idle + lease;
  }
  // Redis' clock, Unix ms.
  long long RedisNowMs() {
    auto r = redis_.Command({"TIME"});
    return std::stoll(r->element[0]->str) * 1000 + std::stoll(r->element[1]->str) / 1000;
  }
  // The error history of a task, oldest first (an empty array when there is none).
  nlohmann::json Errors(const std::string& id) { return redis_.ErrorHistory(keys().Errors(), id); }
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
