// Real batond processes against real redis-servers: delayed tasks on time, retries on their
// backoff, several instances without double promotion or double cron ticks, an instance killed,
// leases of a killed worker taken back, the health endpoint, shutdown, Redis restarts.
#include <baton/client.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "broker/redis_connection.h"
#include "harness/redis_server.h"

namespace {

using namespace std::chrono;
using baton::testing::Process;
using baton::testing::RedisServer;
using baton::testing::TempDir;

constexpr char kNs[] = "e2e";
const milliseconds kLateBound{250};  // generous: a loaded 2-core CI machine

std::string Str(const redisReply* r) { return r->str ? std::string(r->str, r->len) : ""; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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
  std::map<std::string, std::string> fields;
};

class BatondTest : public ::testing::Test {
 protected:
  void SetUp() override { redis_.LoadFunctions(); }

  std::unique_ptr<baton::Client> Connect() {
    baton::ClientOptions o;
    o.redis_url = redis_.url();
    auto client = baton::Client::Connect(o);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(*client) : nullptr;
  }

  std::vector<StreamEntry> Stream(const std::string& type) {
    std::vector<StreamEntry> out;
    auto reply =
        redis_.Command({"XRANGE", "baton:{" + std::string(kNs) + "}:stream:" + type, "-", "+"});
    for (std::size_t i = 0; i < reply->elements; ++i) {
      StreamEntry e;
      e.sid = Str(reply->element[i]->element[0]);
      e.ms = std::stoll(e.sid.substr(0, e.sid.find('-')));
      redisReply* kv = reply->element[i]->element[1];
      for (std::size_t j = 0; j + 1 < kv->elements; j += 2) {
        e.fields[Str(kv->element[j])] = Str(kv->element[j + 1]);
      }
      out.push_back(std::move(e));
    }
    return out;
  }

  long long StreamLength(const std::string& type) {
    return redis_.Integer({"XLEN", "baton:{" + std::string(kNs) + "}:stream:" + type});
  }

  // Waits until the stream of `type` holds at least `n` entries.
  bool WaitForStreamLength(const std::string& type, long long n, milliseconds timeout) {
    auto deadline = steady_clock::now() + timeout;
    while (steady_clock::now() < deadline) {
      if (StreamLength(type) >= n) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return StreamLength(type) >= n;
  }

  std::int64_t ServerMs() {
    auto r = redis_.Command({"TIME"});
    return std::stoll(Str(r->element[0])) * 1000 + std::stoll(Str(r->element[1])) / 1000;
  }

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
                                     const std::map<std::string, std::int64_t>& due) {
    std::vector<std::int64_t> late;
    for (const StreamEntry& e : Stream(type)) {
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

  // FCALL baton_dequeue for one consumer: [SID, id] of the first delivered entry, or empty.
  std::pair<std::string, std::string> Dequeue(const std::string& type, const std::string& group,
                                              const std::string& consumer) {
    const std::string p = "baton:{" + std::string(kNs) + "}:";
    auto r = redis_.Command({"FCALL", "baton_dequeue", "6", p + "stream:" + type, p + "tasks",
                             p + "events", p + "bodies", p + "errors", p + "dead:" + type, group,
                             consumer, "1", "100000"});
    EXPECT_EQ(r->type, REDIS_REPLY_ARRAY) << Str(r.get());
    if (r->type != REDIS_REPLY_ARRAY || r->element[0]->elements < 9) return {};
    return {Str(r->element[0]->element[0]), Str(r->element[0]->element[1])};
  }

  // FCALL baton_fail with no jitter: returns [outcome, due_ms].
  std::pair<std::string, std::int64_t> Fail(const std::string& type, const std::string& group,
                                            const std::string& consumer, const std::string& sid,
                                            const std::string& id, int base_ms) {
    const std::string p = "baton:{" + std::string(kNs) + "}:";
    auto r = redis_.Command({"FCALL",
                             "baton_fail",
                             "7",
                             p + "stream:" + type,
                             p + "scheduled:" + type,
                             p + "dead:" + type,
                             p + "tasks",
                             p + "bodies",
                             p + "errors",
                             p + "events",
                             group,
                             id,
                             sid,
                             consumer,
                             "error",
                             "boom",
                             "",
                             std::to_string(base_ms),
                             "600000",
                             "0",
                             "100000"});
    EXPECT_EQ(r->type, REDIS_REPLY_ARRAY) << Str(r.get());
    if (r->type != REDIS_REPLY_ARRAY) return {};
    auto due = r->element[1]->type == REDIS_REPLY_INTEGER ? r->element[1]->integer
                                                          : std::stoll(Str(r->element[1]));
    return {Str(r->element[0]), due};
  }

  std::string Record(const std::string& id) {
    return redis_.String({"HGET", "baton:{" + std::string(kNs) + "}:tasks", id});
  }

  RedisServer redis_;
  TempDir dir_;
};

// The timing tests create their task type before batond starts: a promoter that has never seen
// any type ignores wake-up messages until its next periodic pass (reported to the promoter's
// owner: Promoter::Loop plans with now_ms = 0 after a pass over no types).
TEST_F(BatondTest, DelayedTasksFireOnTime) {
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  // A far task first: the promoter sleeps towards it (capped at its interval)...
  auto far = EnqueueAt(*client, "mail", system_clock::now() + seconds(30));
  Batond batond(redis_.url(), dir_.path(), "b1");
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();

  std::map<std::string, std::int64_t> due;
  std::this_thread::sleep_for(milliseconds(150));
  // ...then earlier ones, each announced on baton:wakeup, in descending order so that every one
  // becomes the new earliest. Without the wake-up they would fire up to a second late.
  const auto base = system_clock::now() + milliseconds(400);
  for (int i = 39; i >= 0; --i) {
    auto [id, due_ms] = EnqueueAt(*client, "mail", base + milliseconds(i * 50));
    due[id] = due_ms;
  }
  ASSERT_TRUE(WaitForStreamLength("mail", 40, seconds(15)));
  std::this_thread::sleep_for(milliseconds(100));
  std::vector<std::int64_t> late = Lateness("mail", due);
  PrintLateness("delayed tasks", late);
  ASSERT_EQ(late.size(), 40u);
  EXPECT_GE(late.front(), 0) << "a task fired before its due time";
  EXPECT_LT(late.back(), kLateBound.count());
  EXPECT_EQ(StreamLength("mail"), 40);  // the far task still waits
  EXPECT_EQ(Record(far.first).rfind("scheduled|", 0), 0u);
}

TEST_F(BatondTest, RetriesFollowTheBackoff) {
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  baton::TaskRequest req;
  req.ns = kNs;
  req.task_type = "job";
  auto queued = client->Enqueue(req);
  ASSERT_TRUE(queued.ok());
  const std::string id = queued->task_id;
  Batond batond(redis_.url(), dir_.path(), "b1");
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();

  for (int attempt = 1; attempt <= 3; ++attempt) {
    auto [sid, got] = Dequeue("job", "g", "w1");
    ASSERT_EQ(got, id) << "attempt " << attempt;
    const std::int64_t before = ServerMs();
    auto [outcome, due_ms] = Fail("job", "g", "w1", sid, id, 200);
    const std::int64_t after = ServerMs();
    ASSERT_EQ(outcome, "retry");
    // No jitter: the delay is exactly base * 2^(n-1).
    const std::int64_t delay = 200LL << (attempt - 1);
    EXPECT_GE(due_ms, before + delay);
    EXPECT_LE(due_ms, after + delay);
    EXPECT_EQ(Record(id).rfind("retry|", 0), 0u) << Record(id);

    auto deadline = steady_clock::now() + seconds(10);
    const StreamEntry* back = nullptr;
    std::vector<StreamEntry> entries;
    while (back == nullptr && steady_clock::now() < deadline) {
      entries = Stream("job");
      for (const StreamEntry& e : entries) {
        if (e.fields.at("id") == id && e.fields.at("attempt") == std::to_string(attempt)) back = &e;
      }
      if (back == nullptr) std::this_thread::sleep_for(milliseconds(5));
    }
    ASSERT_NE(back, nullptr) << "attempt " << attempt << " never came back";
    std::printf("retry %d: back in the stream %lld ms after its due time (delay %lld ms)\n",
                attempt, static_cast<long long>(back->ms - due_ms), static_cast<long long>(delay));
    EXPECT_GE(back->ms, due_ms);
    EXPECT_LT(back->ms - due_ms, kLateBound.count());
  }
}

TEST_F(BatondTest, TwoInstancesNeverDoublePromote) {
  Batond b1(redis_.url(), dir_.path(), "b1");
  Batond b2(redis_.url(), dir_.path(), "b2");
  ASSERT_TRUE(b1.WaitRunning()) << b1.Log();
  ASSERT_TRUE(b2.WaitRunning()) << b2.Log();
  auto client = Connect();
  ASSERT_NE(client, nullptr);

  // 1000 tasks due across one second, starting 1.5 s from now.
  const auto base = system_clock::now() + milliseconds(1500);
  std::vector<baton::TaskRequest> requests;
  for (int i = 0; i < 1000; ++i) {
    baton::TaskRequest req;
    req.ns = kNs;
    req.task_type = "bulk";
    req.payload = {{"i", i}};
    req.options.run_at = base + milliseconds(i);
    requests.push_back(std::move(req));
  }
  std::map<std::string, std::int64_t> due;
  for (std::size_t from = 0; from < requests.size(); from += 100) {
    auto results = client->EnqueueMany(std::span(requests).subspan(from, 100));
    ASSERT_TRUE(results.ok()) << results.status().ToString();
    for (const auto& r : *results) due[r.task_id] = r.due_ms;
  }
  ASSERT_EQ(due.size(), 1000u);
  ASSERT_TRUE(WaitForStreamLength("bulk", 1000, seconds(20)));
  std::this_thread::sleep_for(milliseconds(500));  // a double promotion would show up by now

  std::vector<StreamEntry> entries = Stream("bulk");
  std::set<std::string> ids;
  for (const StreamEntry& e : entries) ids.insert(e.fields.at("id"));
  EXPECT_EQ(entries.size(), 1000u);
  EXPECT_EQ(ids.size(), 1000u);
  EXPECT_EQ(redis_.Integer({"ZCARD", "baton:{e2e}:scheduled:bulk"}), 0);
  std::vector<std::int64_t> late = Lateness("bulk", due);
  PrintLateness("1000 tasks, two batond", late);
  EXPECT_LT(late.back(), 1000);  // a burst of 1000: loose bound, precision is measured in bench/
  EXPECT_TRUE(b1.process().Running());
  EXPECT_TRUE(b2.process().Running());
}

TEST_F(BatondTest, TwoInstancesNeverDoubleFireCron) {
  Batond b1(redis_.url(), dir_.path(), "b1");
  Batond b2(redis_.url(), dir_.path(), "b2");
  ASSERT_TRUE(b1.WaitRunning()) << b1.Log();
  ASSERT_TRUE(b2.WaitRunning()) << b2.Log();
  redis_.Command({"HSET", "baton:cron", "every-second",
                  R"({"schedule":"* * * * * *","namespace":"e2e","task_type":"tick"})"});
  redis_.Command({"PUBLISH", "baton:cron:changed", "every-second"});
  std::this_thread::sleep_for(milliseconds(3500));
  redis_.Command({"HDEL", "baton:cron", "every-second"});
  redis_.Command({"PUBLISH", "baton:cron:changed", "every-second"});
  std::this_thread::sleep_for(milliseconds(1500));

  std::vector<StreamEntry> entries = Stream("tick");
  std::set<std::int64_t> ticks;
  for (const StreamEntry& e : entries) {
    auto extra = nlohmann::json::parse(e.fields.at("extra"));
    ticks.insert(extra["cron"]["tick"].get<std::int64_t>());
    EXPECT_EQ(e.fields.at("id"),
              "cron:every-second:" + std::to_string(extra["cron"]["tick"].get<std::int64_t>()));
  }
  std::printf("cron: %zu ticks fired by two batond\n", ticks.size());
  EXPECT_EQ(ticks.size(), entries.size()) << "a tick fired twice";
  EXPECT_GE(ticks.size(), 2u);
  EXPECT_LE(ticks.size(), 6u);
  // No tick skipped between the first and the last.
  if (!ticks.empty()) {
    EXPECT_EQ(*ticks.rbegin() - *ticks.begin() + 1, static_cast<std::int64_t>(ticks.size()));
  }
  // The shared state points at the last tick.
  EXPECT_EQ(redis_.String({"HGET", "baton:cron:state", "every-second"}),
            std::to_string(*ticks.rbegin()));
}

TEST_F(BatondTest, KillingOneInstanceChangesNothing) {
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  EnqueueAt(*client, "after_kill", system_clock::now() + hours(1));  // creates the type
  Batond b1(redis_.url(), dir_.path(), "b1");
  Batond b2(redis_.url(), dir_.path(), "b2");
  ASSERT_TRUE(b1.WaitRunning()) << b1.Log();
  ASSERT_TRUE(b2.WaitRunning()) << b2.Log();
  b1.process().Kill();  // SIGKILL
  std::map<std::string, std::int64_t> due;
  const auto base = system_clock::now() + milliseconds(300);
  for (int i = 0; i < 20; ++i) {
    auto [id, due_ms] = EnqueueAt(*client, "after_kill", base + milliseconds(i * 50));
    due[id] = due_ms;
  }
  ASSERT_TRUE(WaitForStreamLength("after_kill", 20, seconds(15)));
  std::this_thread::sleep_for(milliseconds(200));
  std::vector<std::int64_t> late = Lateness("after_kill", due);
  PrintLateness("after SIGKILL of one instance", late);
  ASSERT_EQ(late.size(), 20u);
  EXPECT_EQ(StreamLength("after_kill"), 20);  // the one-hour task still waits
  EXPECT_LT(late.back(), kLateBound.count());
  EXPECT_TRUE(b2.process().Running());
}

TEST_F(BatondTest, ReclaimsTheTaskOfAKilledWorkerAndSparesALiveOne) {
  Batond batond(redis_.url(), dir_.path(), "b1",
                {"--lease-ms", "1000", "--reaper-interval-ms", "100", "--retry-base-ms", "100",
                 "--retry-max-ms", "100"});
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  baton::TaskRequest req;
  req.ns = kNs;
  req.task_type = "work";
  auto t1 = client->Enqueue(req);
  auto t2 = client->Enqueue(req);
  ASSERT_TRUE(t1.ok() && t2.ok());

  // "crashed" takes t1 and never acks nor heartbeats (a killed worker's pending entry).
  auto [crashed_sid, crashed_id] = Dequeue("work", "g", "crashed");
  ASSERT_EQ(crashed_id, t1->task_id);
  // "alive" takes t2 and heartbeats every 200 ms.
  auto [alive_sid, alive_id] = Dequeue("work", "g", "alive");
  ASSERT_EQ(alive_id, t2->task_id);
  std::atomic<bool> beating{true};
  std::thread heartbeat([&, sid = alive_sid] {
    RedisServer* redis = &redis_;
    baton::internal::RedisEndpoint ep;
    ep.port = redis->port();
    auto conn = baton::internal::RedisConnection::Open(ep);
    ASSERT_TRUE(conn.ok());
    while (beating) {
      auto r = (*conn)->Command(
          {"FCALL", "baton_extend", "1", "baton:{e2e}:stream:work", "g", "alive", sid});
      EXPECT_TRUE(r.ok());
      std::this_thread::sleep_for(milliseconds(200));
    }
  });

  // t1 is taken back after the lease, counted as a failed attempt, and retried.
  auto deadline = steady_clock::now() + seconds(15);
  bool retried = false;
  while (!retried && steady_clock::now() < deadline) {
    for (const StreamEntry& e : Stream("work")) {
      retried = retried || (e.fields.at("id") == t1->task_id && e.fields.at("attempt") == "1");
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(retried) << Record(t1->task_id) << "\n" << batond.Log();
  const std::string errors = redis_.String({"HGET", "baton:{e2e}:errors", t1->task_id});
  ASSERT_FALSE(errors.empty());
  auto attempts = nlohmann::json::parse(errors);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0]["kind"], "lease_expired");
  EXPECT_NE(attempts[0]["error"].get<std::string>().find("crashed"), std::string::npos);

  // Well past the lease, the heartbeating worker still holds t2.
  std::this_thread::sleep_for(milliseconds(1500));
  beating = false;
  heartbeat.join();
  EXPECT_EQ(redis_.String({"HGET", "baton:{e2e}:errors", t2->task_id}), "");
  auto pending =
      redis_.Command({"XPENDING", "baton:{e2e}:stream:work", "g", "-", "+", "10", "alive"});
  ASSERT_EQ(pending->elements, 1u);
  EXPECT_EQ(Str(pending->element[0]->element[0]), alive_sid);
  EXPECT_TRUE(batond.WaitForLog("tasks taken back", seconds(1))) << batond.Log();
}

TEST_F(BatondTest, HealthEndpointFollowsRedis) {
  const int port = baton::testing::FreeLoopbackPort();
  Batond batond(redis_.url(), dir_.path(), "b1", {"--health", "127.0.0.1:" + std::to_string(port)});
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(5, 0);
  auto up = http.Get("/healthz");
  ASSERT_TRUE(up) << batond.Log();
  EXPECT_EQ(up->status, 200);
  auto body = nlohmann::json::parse(up->body);
  EXPECT_EQ(body["status"], "ok");
  EXPECT_EQ(body["redis"], "up");
  EXPECT_EQ(body["instance"], "b1");
  EXPECT_EQ(body["components"]["promoter"], "running");

  redis_.Kill();
  auto down = http.Get("/healthz");
  ASSERT_TRUE(down);
  EXPECT_EQ(down->status, 503);
  auto down_body = nlohmann::json::parse(down->body);
  EXPECT_EQ(down_body["status"], "unavailable");
  EXPECT_EQ(down_body["redis"], "down");
  std::this_thread::sleep_for(milliseconds(1000));
  EXPECT_TRUE(batond.process().Running()) << "batond died with Redis";
  EXPECT_EQ(http.Get("/healthz")->status, 503);
}

TEST_F(BatondTest, SigtermStopsGracefully) {
  Batond batond(redis_.url(), dir_.path(), "b1");
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();
  batond.process().Signal(SIGTERM);
  auto status = batond.process().Wait(seconds(10));
  ASSERT_TRUE(status.has_value()) << "batond did not stop";
  EXPECT_EQ(*status, 0);
  EXPECT_NE(batond.Log().find("msg=\"batond stopped\""), std::string::npos) << batond.Log();
}

TEST_F(BatondTest, JsonLogs) {
  Batond batond(redis_.url(), dir_.path(), "b1", {"--log-format", "json"});
  ASSERT_TRUE(batond.WaitForLog("\"msg\":\"batond running\"")) << batond.Log();
  std::istringstream lines(batond.Log());
  std::string line;
  int parsed = 0;
  while (std::getline(lines, line)) {
    auto doc = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << line;
    EXPECT_TRUE(doc.contains("ts") && doc.contains("level") && doc.contains("msg")) << line;
    ++parsed;
  }
  EXPECT_GE(parsed, 2);
}

TEST_F(BatondTest, ServesOnlyTheConfiguredNamespaces) {
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  Batond batond(redis_.url(), dir_.path(), "b1",
                {"--namespaces", kNs, "--discovery-interval-ms", "200"});
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();
  // A type first used after batond started is discovered; another namespace is left alone.
  auto mine = EnqueueAt(*client, "late_type", system_clock::now() + milliseconds(600));
  baton::TaskRequest other;
  other.ns = "elsewhere";
  other.task_type = "late_type";
  other.options.run_at = system_clock::now() + milliseconds(600);
  auto theirs = client->Enqueue(other);
  ASSERT_TRUE(theirs.ok());
  ASSERT_TRUE(WaitForStreamLength("late_type", 1, seconds(10))) << batond.Log();
  std::this_thread::sleep_for(milliseconds(800));
  EXPECT_EQ(redis_.Integer({"ZCARD", "baton:{elsewhere}:scheduled:late_type"}), 1);
}

TEST_F(BatondTest, RefusesAMissingFunctionsLibraryUnlessAskedToLoadIt) {
  RedisServer bare;  // no functions loaded
  Batond refused(bare.url(), dir_.path(), "refused");
  auto code = refused.process().Wait(seconds(15));
  ASSERT_TRUE(code.has_value()) << refused.Log();
  EXPECT_EQ(*code, 3);
  EXPECT_NE(refused.Log().find("baton init"), std::string::npos) << refused.Log();

  Batond loader(bare.url(), dir_.path(), "loader", {"--load-functions"});
  ASSERT_TRUE(loader.WaitRunning()) << loader.Log();
  EXPECT_EQ(bare.String({"FCALL_RO", "baton_version", "0"}), "1");
}

// A redis-server on a fixed port that can be stopped and started again (the harness' server
// takes a new port every time).
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
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  TempDir dir_;
  int port_;
  std::unique_ptr<Process> process_;
};

TEST_F(BatondTest, SurvivesARedisRestart) {
  RestartableRedis redis;
  Batond batond(redis.url(), dir_.path(), "b1");
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();
  redis.Kill();
  std::this_thread::sleep_for(milliseconds(1500));
  ASSERT_TRUE(batond.process().Running());
  redis.Start();  // empty: no persistence

  baton::ClientOptions o;
  o.redis_url = redis.url();
  auto client = baton::Client::Connect(o);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  baton::TaskRequest req;
  req.ns = kNs;
  req.task_type = "after_restart";
  req.options.run_at = system_clock::now() + milliseconds(300);
  auto r = (*client)->Enqueue(req);
  ASSERT_TRUE(r.ok());
  // The components reconnect with backoff (at most 5 s), then promote.
  redisContext* c =
      redisConnect("127.0.0.1", std::stoi(redis.url().substr(redis.url().rfind(':') + 1)));
  ASSERT_TRUE(c != nullptr && c->err == 0);
  long long len = 0;
  auto deadline = steady_clock::now() + seconds(15);
  while (len == 0 && steady_clock::now() < deadline) {
    auto* reply =
        static_cast<redisReply*>(redisCommand(c, "XLEN baton:{e2e}:stream:after_restart"));
    len = reply != nullptr ? reply->integer : 0;
    if (reply) freeReplyObject(reply);
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(len, 1) << batond.Log();

  // The cron ticker is back too: a job defined after the restart fires.
  auto* set = static_cast<redisReply*>(redisCommand(
      c, "HSET baton:cron again %s",
      R"({"schedule":"* * * * * *","namespace":"e2e","task_type":"cron_after_restart"})"));
  ASSERT_NE(set, nullptr);
  freeReplyObject(set);
  len = 0;
  deadline = steady_clock::now() + seconds(15);
  while (len == 0 && steady_clock::now() < deadline) {
    auto* reply =
        static_cast<redisReply*>(redisCommand(c, "XLEN baton:{e2e}:stream:cron_after_restart"));
    len = reply != nullptr ? reply->integer : 0;
    if (reply) freeReplyObject(reply);
    std::this_thread::sleep_for(milliseconds(20));
  }
  redisFree(c);
  EXPECT_GE(len, 1) << batond.Log();
  EXPECT_TRUE(batond.process().Running());
}

TEST_F(BatondTest, AuthenticatesAsAnAclUser) {
  auto acl = redis_.Command({"ACL", "SETUSER", "batond", "on", ">s3cret", "~*", "&*", "+@all"});
  ASSERT_EQ(acl->type, REDIS_REPLY_STATUS) << Str(acl.get());
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  EnqueueAt(*client, "authed", system_clock::now() + hours(1));  // creates the type
  const std::string url = "redis://batond:s3cret@127.0.0.1:" + std::to_string(redis_.port());
  Batond batond(url, dir_.path(), "b1");
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();
  EXPECT_EQ(batond.Log().find("s3cret"), std::string::npos) << "the password was logged";

  auto [id, due_ms] = EnqueueAt(*client, "authed", system_clock::now() + milliseconds(300));
  ASSERT_TRUE(WaitForStreamLength("authed", 1, seconds(10))) << batond.Log();
  redis_.Command({"HSET", "baton:cron", "authed-cron",
                  R"({"schedule":"* * * * * *","namespace":"e2e","task_type":"authed_cron"})"});
  redis_.Command({"PUBLISH", "baton:cron:changed", "authed-cron"});
  ASSERT_TRUE(WaitForStreamLength("authed_cron", 1, seconds(10))) << batond.Log();
  // batond's connections (promoter, its subscriber, reaper, cron ticker and its subscriber) are
  // all logged in as the ACL user.
  const std::string clients = redis_.String({"CLIENT", "LIST"});
  std::size_t as_batond = 0;
  for (std::size_t pos = clients.find("user=batond"); pos != std::string::npos;
       pos = clients.find("user=batond", pos + 1)) {
    ++as_batond;
  }
  EXPECT_GE(as_batond, 5u) << clients;
}

}  // namespace
