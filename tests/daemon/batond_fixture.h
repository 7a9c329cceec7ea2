#pragma once
// Shared by batond's end-to-end tests: a real batond process with its log file, a fixture with a
// real redis-server and helpers that call the functions the way any client would (fn:: builders),
// and a redis-server that can be killed and started again on the same port.
#include <baton/client.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "broker/functions.h"
#include "broker/keys.h"
#include "harness/redis_server.h"
#include "harness/work_entry.h"
#include "scheduler/scheduler_test_util.h"

namespace baton::e2e {

using namespace std::chrono;
using baton::internal::Keys;
using baton::testing::Process;
using baton::testing::RedisServer;
using baton::testing::TempDir;
namespace fn = baton::internal::fn;

inline constexpr char kNs[] = "e2e";
inline const milliseconds kLateBound{250};  // generous: a loaded 2-core CI machine

inline std::string Str(const redisReply* r) { return r->str ? std::string(r->str, r->len) : ""; }

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// How many times `needle` occurs in `text`.
inline std::size_t Count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// One batond process with its log file.
class Batond {
 public:
  Batond(const std::string& redis_url, const std::string& dir, const std::string& name,
         std::vector<std::string> extra = {})
      : log_(dir + "/" + name + ".log") {
    std::vector<std::string> argv = {BATOND_PATH, "--redis-url", redis_url, "--instance",
                                     name,        "--log-level", "debug"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    process_ = std::make_unique<Process>(argv, log_);
  }

  // Waits until the log contains `text`; false on timeout or when the process exited.
  bool WaitForLog(const std::string& text, milliseconds timeout = seconds(15)) {
    auto deadline = steady_clock::now() + timeout;
    while (steady_clock::now() < deadline) {
      if (Log().find(text) != std::string::npos) return true;
      if (!process_->Running()) return Log().find(text) != std::string::npos;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }
  // "batond running" is logged once the first discovery (with its SCAN) is done.
  bool WaitRunning() { return WaitForLog("msg=\"batond running\""); }

  std::string Log() const { return ReadFile(log_); }
  Process& process() { return *process_; }

 private:
  std::string log_;
  std::unique_ptr<Process> process_;
};

struct StreamEntry {
  std::string sid;
  std::int64_t ms = 0;  // the entry id's time: when it was added (Redis clock)
  // task, payload, and the parts of task by name: id, max_retry, ..., attempt, extra
  // (harness/work_entry.h).
  std::map<std::string, std::string> fields;
};

class BatondTest : public ::testing::Test {
 protected:
  void SetUp() override { redis_.LoadFunctions(); }

  std::unique_ptr<baton::Client> Connect() {
    baton::ClientOptions o;
    o.redis.url = redis_.url();
    auto client = baton::Client::Connect(o);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(*client) : nullptr;
  }

  std::vector<StreamEntry> Stream(const std::string& type, const std::string& ns = kNs) {
    std::vector<StreamEntry> out;
    auto reply = redis_.Command({"XRANGE", Keys(ns).Stream(type), "-", "+"});
    for (std::size_t i = 0; i < reply->elements; ++i) {
      StreamEntry e;
      e.sid = Str(reply->element[i]->element[0]);
      e.ms = std::stoll(e.sid.substr(0, e.sid.find('-')));
      e.fields = baton::testing::WorkEntryFields(reply->element[i]->element[1]);
      out.push_back(std::move(e));
    }
    return out;
  }

  long long StreamLength(const std::string& type, const std::string& ns = kNs) {
    return redis_.Integer({"XLEN", Keys(ns).Stream(type)});
  }

  // Waits until the stream of `type` holds at least `n` entries.
  bool WaitForStreamLength(const std::string& type, long long n, milliseconds timeout,
                           const std::string& ns = kNs) {
    auto deadline = steady_clock::now() + timeout;
    while (steady_clock::now() < deadline) {
      if (StreamLength(type, ns) >= n) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return StreamLength(type, ns) >= n;
  }

  std::int64_t ServerMs() { return internal::testutil::ServerMs(redis_); }

  // Enqueues one task due at `run_at`; returns its id and due time (ms, Redis clock).
  std::pair<std::string, std::int64_t> EnqueueAt(baton::Client& client, const std::string& type,
                                                 system_clock::time_point run_at) {
    baton::TaskRequest req;
    req.ns = kNs;
    req.task_type = type;
    req.options.run_at = run_at;
    auto r = client.Enqueue(req);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return {};
    EXPECT_EQ(r->outcome, baton::EnqueueOutcome::kScheduled);
    return {r->task_id, r->due_ms};
  }

  // Lateness of every entry of `type` whose task id is in `due` (entry time - due time), sorted.
  std::vector<std::int64_t> Lateness(const std::string& type,
                                     const std::map<std::string, std::int64_t>& due,
                                     const std::string& ns = kNs) {
    std::vector<std::int64_t> late;
    for (const StreamEntry& e : Stream(type, ns)) {
      auto it = due.find(e.fields.at("id"));
      if (it != due.end()) late.push_back(e.ms - it->second);
    }
    std::sort(late.begin(), late.end());
    return late;
  }

  static void PrintLateness(const char* what, const std::vector<std::int64_t>& late) {
    if (late.empty()) return;
    std::printf("%s: %zu tasks, lateness p50 %lld ms, p99 %lld ms, max %lld ms\n", what,
                late.size(), static_cast<long long>(late[late.size() / 2]),
                static_cast<long long>(late[late.size() * 99 / 100]),
                static_cast<long long>(late.back()));
  }

  // baton_v2_dequeue of one task for one consumer, leased for lease_ms (0: the namespace's
  // setting): the delivered task's id and SID, or empty.
  fn::HeldTask Dequeue(const std::string& type, const std::string& group,
                       const std::string& consumer, std::int64_t lease_ms = 0,
                       const std::string& ns = kNs) {
    auto r = redis_.Command(fn::Dequeue(ns, type, group, consumer, 1, lease_ms));
    EXPECT_EQ(r->type, REDIS_REPLY_ARRAY) << Str(r.get());
    if (r->type != REDIS_REPLY_ARRAY || r->element[0]->elements < 9) return {};
    return {Str(r->element[0]->element[1]), Str(r->element[0]->element[0])};
  }

  // baton_v2_fail with no jitter: returns [outcome, due_ms].
  std::pair<std::string, std::int64_t> Fail(const std::string& type, const std::string& group,
                                            const std::string& consumer, const fn::HeldTask& task,
                                            int base_ms) {
    fn::FailArgs a;
    a.group = group;
    a.consumer = consumer;
    a.id = task.id;
    a.sid = task.sid;
    a.kind = "error";
    a.message = "boom";
    a.base_ms = base_ms;
    a.max_ms = 600000;
    auto r = redis_.Command(fn::Fail(kNs, type, a));
    EXPECT_EQ(r->type, REDIS_REPLY_ARRAY) << Str(r.get());
    if (r->type != REDIS_REPLY_ARRAY) return {};
    auto due = r->element[1]->type == REDIS_REPLY_INTEGER ? r->element[1]->integer
                                                          : std::stoll(Str(r->element[1]));
    return {Str(r->element[0]), due};
  }

  // When the lease of the entry `sid` held in `group` ends (Unix ms, Redis clock; -1 when it is
  // not pending): its delivery time (reset by each heartbeat) plus its consumer's lease length
  // (leases:TYPE, else the namespace's lease_ms, else 30 s).
  std::int64_t LeaseEnd(const std::string& type, const std::string& group, const std::string& sid,
                        const std::string& ns = kNs) {
    redis_.Command({"MULTI"});
    redis_.Command({"TIME"});
    redis_.Command({"XPENDING", Keys(ns).Stream(type), group, sid, sid, "1"});
    auto exec = redis_.Command({"EXEC"});
    if (exec->type != REDIS_REPLY_ARRAY || exec->elements != 2) return -1;
    const redisReply* pending = exec->element[1];
    if (pending->type != REDIS_REPLY_ARRAY || pending->elements == 0) return -1;
    const std::int64_t now = std::stoll(Str(exec->element[0]->element[0])) * 1000 +
                             std::stoll(Str(exec->element[0]->element[1])) / 1000;
    const std::string consumer = Str(pending->element[0]->element[1]);
    const std::int64_t idle = pending->element[0]->element[2]->integer;
    std::int64_t lease = 30000;
    for (const std::string& text : {redis_.String({"HGET", Keys(ns).Leases(type), consumer}),
                                    redis_.String({"HGET", Keys(ns).Config(), "lease_ms"})}) {
      if (!text.empty() && std::stoll(text) >= 1000 && std::stoll(text) <= 86400000) {
        lease = std::stoll(text);
        break;
      }
    }
    return now - idle + lease;
  }

  std::string Record(const std::string& id, const std::string& ns = kNs) {
    return redis_.String({"HGET", Keys(ns).Tasks(), id});
  }
  // The task's failures, oldest first (an empty array when there is none).
  nlohmann::json Errors(const std::string& id, const std::string& ns = kNs) {
    return redis_.ErrorHistory(Keys(ns).Errors(), id);
  }
  bool Registered(const std::string& ns) {
    return redis_.Integer({"SISMEMBER", std::string(Keys::kNamespaces), ns}) == 1;
  }

  RedisServer redis_;
  TempDir dir_;
};

// A redis-server on a fixed port that can be stopped and started again (the harness' server
// takes a new port every time). Starts with the functions library loaded; no persistence.
class RestartableRedis {
 public:
  RestartableRedis() : port_(baton::testing::FreeLoopbackPort()) { Start(); }

  void Start() {
    process_ = std::make_unique<Process>(std::vector<std::string>{
        "redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1", "--dir",
        dir_.path(), "--save", "", "--appendonly", "no", "--logfile", dir_.path() + "/redis.log"});
    for (int i = 0; i < 500; ++i) {
      redisContext* c = redisConnect("127.0.0.1", port_);
      if (c != nullptr && c->err == 0) {
        auto* r = static_cast<redisReply*>(redisCommand(
            c, "FUNCTION LOAD REPLACE %s", baton::testing::FunctionLibrarySource().c_str()));
        bool ok = r != nullptr && r->type != REDIS_REPLY_ERROR;
        if (r) freeReplyObject(r);
        redisFree(c);
        if (ok) return;
      } else if (c != nullptr) {
        redisFree(c);
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    FAIL() << "redis-server did not start on port " << port_;
  }
  void Kill() { process_->Kill(); }
  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  TempDir dir_;
  int port_;
  std::unique_ptr<Process> process_;
};

}  // namespace baton::e2e
