// Real batond processes against real redis-servers: delayed tasks on time, retries on their
// backoff, several instances without double promotion or double cron ticks, an instance killed,
// the health endpoint (Redis down, functions library gone), shutdown, structured logs (outages
// included), Redis restarts. Leases and namespace discovery: batond_discovery_e2etest.cpp.
#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "batond_fixture.h"

namespace baton::e2e {
namespace {

TEST_F(BatondTest, DelayedTasksFireOnTime) {
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  // A far task first: the promoter sleeps towards it (capped at its interval)...
  auto far = EnqueueAt(*client, "mail", system_clock::now() + seconds(30));
  Batond batond(redis_.url(), dir_.path(), "b1");
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();

  std::map<std::string, std::int64_t> due;
  std::this_thread::sleep_for(milliseconds(150));
  // ...then earlier ones, each announced on baton:v2:wakeup, in descending order so that every one
  // becomes the new earliest. Without the wake-up they would fire up to 30 s late (the promoter
  // does not poll).
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
    fn::HeldTask held = Dequeue("job", "g", "w1");
    ASSERT_EQ(held.id, id) << "attempt " << attempt;
    const std::int64_t before = ServerMs();
    auto [outcome, due_ms] = Fail("job", "g", "w1", held, 200);
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
  EXPECT_EQ(redis_.Integer({"ZCARD", Keys(kNs).Scheduled("bulk")}), 0);
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
  redis_.Command({"HSET", std::string(Keys::kCron), "every-second",
                  R"({"schedule":"* * * * * *","namespace":"e2e","task_type":"tick"})"});
  redis_.Command({"PUBLISH", "baton:cron:changed", "every-second"});
  std::this_thread::sleep_for(milliseconds(3500));
  redis_.Command({"HDEL", std::string(Keys::kCron), "every-second"});
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
  EXPECT_EQ(redis_.String({"HGET", std::string(Keys::kCronState), "every-second"}),
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
  EXPECT_EQ(body["functions"], "ok");
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

// A Redis that lost the functions library (FUNCTION FLUSH, a restart without persistence) makes
// every promote and reclaim fail: unhealthy, with the fix in the answer and once in the log.
TEST_F(BatondTest, HealthEndpointReportsAMissingFunctionsLibrary) {
  const int port = baton::testing::FreeLoopbackPort();
  Batond batond(redis_.url(), dir_.path(), "b1", {"--health", "127.0.0.1:" + std::to_string(port)});
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(5, 0);
  ASSERT_EQ(http.Get("/healthz")->status, 200);

  redis_.Command({"FUNCTION", "FLUSH"});
  auto gone = http.Get("/healthz");
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 503);
  auto body = nlohmann::json::parse(gone->body);
  EXPECT_EQ(body["status"], "unavailable");
  EXPECT_EQ(body["redis"], "up");
  EXPECT_EQ(body["functions"], "missing");
  EXPECT_NE(body["hint"].get<std::string>().find("run `baton init`"), std::string::npos);
  EXPECT_NE(body["error"].get<std::string>().find("version none"), std::string::npos)
      << body.dump();
  ASSERT_TRUE(batond.WaitForLog("functions library missing", seconds(10))) << batond.Log();
  std::this_thread::sleep_for(milliseconds(5500));  // one more library check
  EXPECT_EQ(Count(batond.Log(), "functions library missing"), 1u) << batond.Log();
  EXPECT_TRUE(batond.process().Running());

  redis_.LoadFunctions();
  EXPECT_EQ(http.Get("/healthz")->status, 200);
  EXPECT_TRUE(batond.WaitForLog("functions library is back", seconds(10))) << batond.Log();
}

// With --load-functions, batond loads the library again when it disappears.
TEST_F(BatondTest, ReloadsALostFunctionsLibraryWhenAskedTo) {
  Batond batond(redis_.url(), dir_.path(), "b1", {"--load-functions"});
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();
  redis_.Command({"FUNCTION", "FLUSH"});
  ASSERT_TRUE(batond.WaitForLog("loaded it again", seconds(10))) << batond.Log();
  EXPECT_EQ(redis_.String(fn::Version()), "2");
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  auto [id, due_ms] = EnqueueAt(*client, "reloaded", system_clock::now() + milliseconds(300));
  EXPECT_TRUE(WaitForStreamLength("reloaded", 1, seconds(10))) << batond.Log();
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

// The last stats line (logged after the components stopped) counts what the cron ticker fired.
TEST_F(BatondTest, FinalStatsCountTheCronTicksFired) {
  Batond batond(redis_.url(), dir_.path(), "b1", {"--log-format", "json"});
  ASSERT_TRUE(batond.WaitForLog("\"msg\":\"batond running\"")) << batond.Log();
  redis_.Command({"HSET", std::string(Keys::kCron), "stats-cron",
                  R"({"schedule":"* * * * * *","namespace":"e2e","task_type":"stats_tick"})"});
  redis_.Command({"PUBLISH", "baton:cron:changed", "stats-cron"});
  ASSERT_TRUE(WaitForStreamLength("stats_tick", 1, seconds(10))) << batond.Log();
  batond.process().Signal(SIGTERM);
  auto status = batond.process().Wait(seconds(10));
  ASSERT_TRUE(status.has_value()) << "batond did not stop";
  const long long fired = StreamLength("stats_tick");  // nothing fires after the stop

  // The stats line after "batond stopping" is the final one.
  std::istringstream lines(batond.Log());
  std::string line;
  bool stopping = false;
  std::optional<nlohmann::json> final_stats;
  while (std::getline(lines, line)) {
    auto doc = nlohmann::json::parse(line, nullptr, false);
    if (doc.is_discarded()) continue;
    if (doc.value("msg", "") == "batond stopping") stopping = true;
    if (stopping && doc.value("msg", "") == "stats") final_stats = doc;
  }
  ASSERT_TRUE(final_stats.has_value()) << batond.Log();
  EXPECT_EQ((*final_stats)["cron_fired_total"].get<long long>(), fired) << batond.Log();
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

// The loops (promoter, reaper, subscriber, cron) log through batond's logger: with
// --log-format json every line is a JSON object, a Redis outage included, and each component
// reports the outage once and its recovery once, not once per retry.
TEST_F(BatondTest, JsonLogsIncludeTheLoopsOutagesOncePerComponent) {
  RestartableRedis redis;
  {
    baton::ClientOptions o;
    o.redis.url = redis.url();
    auto client = baton::Client::Connect(o);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    baton::TaskRequest req;
    req.ns = kNs;
    req.task_type = "t";
    ASSERT_TRUE((*client)->Enqueue(req).ok());  // a type for the reaper to check every second
  }
  Batond batond(redis.url(), dir_.path(), "b1", {"--log-format", "json"});
  ASSERT_TRUE(batond.WaitForLog("\"served_types\":1")) << batond.Log();
  redis.Kill();
  std::this_thread::sleep_for(milliseconds(4000));  // several retries of every loop
  redis.Start();
  ASSERT_TRUE(batond.WaitForLog("\"msg\":\"reaper recovered\"", seconds(15))) << batond.Log();
  ASSERT_TRUE(batond.WaitForLog("\"msg\":\"subscriber recovered\"", seconds(15))) << batond.Log();
  ASSERT_TRUE(batond.WaitForLog("\"msg\":\"cron recovered\"", seconds(15))) << batond.Log();
  std::this_thread::sleep_for(milliseconds(500));
  const std::string log = batond.Log();
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    auto doc = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << line;
    EXPECT_TRUE(doc.contains("ts") && doc.contains("level") && doc.contains("msg")) << line;
  }
  // The reaper calls Redis every second: it saw the outage. The promoter sleeps until a due time
  // and may not have noticed it at all; never more than once.
  for (const char* component : {"reaper", "subscriber", "cron"}) {
    EXPECT_EQ(Count(log, "\"msg\":\"" + std::string(component) + " failed, retrying\""), 1u)
        << component << "\n"
        << log;
    EXPECT_EQ(Count(log, "\"msg\":\"" + std::string(component) + " recovered\""), 1u) << component;
  }
  const std::size_t promoter_down = Count(log, "\"msg\":\"promoter failed, retrying\"");
  EXPECT_LE(promoter_down, 1u);
  EXPECT_EQ(Count(log, "\"msg\":\"promoter recovered\""), promoter_down);
  EXPECT_EQ(log.find("baton promoter:"), std::string::npos) << "a plain-text line";
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
  EXPECT_EQ(redis_.Integer({"ZCARD", Keys("elsewhere").Scheduled("late_type")}), 1);
  EXPECT_EQ(batond.Log().find("elsewhere"), std::string::npos) << batond.Log();
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
  EXPECT_EQ(bare.String(fn::Version()), "2");
}

TEST_F(BatondTest, SurvivesARedisRestart) {
  RestartableRedis redis;
  Batond batond(redis.url(), dir_.path(), "b1");
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();
  redis.Kill();
  std::this_thread::sleep_for(milliseconds(1500));
  ASSERT_TRUE(batond.process().Running());
  redis.Start();  // empty: no persistence

  baton::ClientOptions o;
  o.redis.url = redis.url();
  auto client = baton::Client::Connect(o);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  baton::TaskRequest req;
  req.ns = kNs;
  req.task_type = "after_restart";
  req.options.run_at = system_clock::now() + milliseconds(300);
  auto r = (*client)->Enqueue(req);
  ASSERT_TRUE(r.ok());
  // The components reconnect with backoff (at most 5 s), then promote.
  redisContext* c = redisConnect("127.0.0.1", redis.port());
  ASSERT_TRUE(c != nullptr && c->err == 0);
  long long len = 0;
  auto deadline = steady_clock::now() + seconds(15);
  while (len == 0 && steady_clock::now() < deadline) {
    auto* reply = static_cast<redisReply*>(
        redisCommand(c, "XLEN %s", Keys(kNs).Stream("after_restart").c_str()));
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
    auto* reply = static_cast<redisReply*>(
        redisCommand(c, "XLEN %s", Keys(kNs).Stream("cron_after_restart").c_str()));
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
  redis_.Command({"HSET", std::string(Keys::kCron), "authed-cron",
                  R"({"schedule":"* * * * * *","namespace":"e2e","task_type":"authed_cron"})"});
  redis_.Command({"PUBLISH", "baton:cron:changed", "authed-cron"});
  ASSERT_TRUE(WaitForStreamLength("authed_cron", 1, seconds(10))) << batond.Log();
  // batond's connections (promoter, reaper, the subscriber, discovery, the cron ticker with its
  // client and its subscriber) are all logged in as the ACL user.
  const std::string clients = redis_.String({"CLIENT", "LIST"});
  std::size_t as_batond = 0;
  for (std::size_t pos = clients.find("user=batond"); pos != std::string::npos;
       pos = clients.find("user=batond", pos + 1)) {
    ++as_batond;
  }
  EXPECT_GE(as_batond, 7u) << clients;
}

}  // namespace
}  // namespace baton::e2e
