// The lease reaper against a real redis-server: it takes back only tasks whose lease (kept in
// Redis: delivery or last heartbeat + the holder's lease length) ended, never the task of a worker
// that heartbeats, sleeps until the next lease end, and serves the types its source lists.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "broker/keys.h"
#include "harness/redis_server.h"
#include "scheduler/reaper.h"
#include "scheduler/scheduler_test_util.h"
#include "scheduler/type_directory.h"

namespace baton::internal {
namespace {

using namespace std::chrono_literals;
using baton::testing::RedisServer;
using Clock = std::chrono::steady_clock;

constexpr const char* kNs = "rt";

class ReaperTest : public ::testing::Test {
 protected:
  void SetUp() override { redis_.LoadFunctions(); }

  std::vector<std::string> Enqueue(const std::string& type, int n, int max_retry) {
    return testutil::RawEnqueue(redis_, kNs, type, n, 0, max_retry);
  }

  // Leases `count` tasks of `type` to `consumer` in group "g" for lease_ms (a worker's dequeue).
  // `lease_deadline_ms`, when given, receives when their leases end.
  std::vector<fn::HeldTask> Dequeue(const std::string& type, const std::string& consumer, int count,
                                    std::int64_t lease_ms = 1000,
                                    std::int64_t* lease_deadline_ms = nullptr) {
    std::vector<fn::HeldTask> held =
        testutil::RawDequeue(redis_, kNs, type, consumer, count, lease_ms, lease_deadline_ms);
    EXPECT_EQ(held.size(), static_cast<std::size_t>(count));
    return held;
  }

  Reaper::Options Opts() const {
    Reaper::Options o;
    o.redis.url = redis_.url();
    o.name = "test-reaper";
    o.default_retry.base = 50ms;
    o.default_retry.max = 100ms;
    return o;
  }
  std::string Record(const std::string& id) {
    return redis_.String({"HGET", Keys(kNs).Tasks(), id});
  }
  long long PendingCount(const std::string& type) {
    auto r = redis_.Command({"XPENDING", Keys(kNs).Stream(type), "g"});
    return r->type == REDIS_REPLY_ARRAY && r->elements > 0 ? r->element[0]->integer : 0;
  }
  // Calls of one command Redis has run so far (INFO commandstats; "fcall", "xinfo|groups", ...).
  long long Calls(const std::string& command) {
    std::string info = redis_.String({"INFO", "commandstats"});
    const std::string key = "cmdstat_" + command + ":calls=";
    std::size_t at = info.find(key);
    return at == std::string::npos ? 0 : std::stoll(info.substr(at + key.size()));
  }

  RedisServer redis_;
};

TEST_F(ReaperTest, RunOnceReclaimsExpiredLeasesOnly) {
  std::vector<std::string> ids = Enqueue("t", 3, 2);
  const std::int64_t before = testutil::ServerMs(redis_);
  Dequeue("t", "crashed", 3, 1000);
  Reaper reaper(Opts());

  auto fresh = reaper.RunOnce(kNs, "t");
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(fresh->reclaimed, 0);  // leases still live
  // The lease end is computed from XPENDING's idle time (delivery + 1000), read a little after the
  // function's TIME: it may come out a millisecond early, never late.
  EXPECT_GE(fresh->next_deadline_ms, before + 1000 - 2);
  EXPECT_LE(fresh->next_deadline_ms, fresh->now_ms + 1000);
  EXPECT_EQ(PendingCount("t"), 3);

  std::this_thread::sleep_for(1100ms);
  auto expired = reaper.RunOnce(kNs, "t");
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  EXPECT_EQ(expired->reclaimed, 3);
  EXPECT_EQ(expired->retried, 3);
  EXPECT_EQ(expired->dead, 0);
  EXPECT_EQ(expired->next_deadline_ms, -1);
  EXPECT_EQ(PendingCount("t"), 0);  // no lease left
  EXPECT_EQ(redis_.Integer({"XLEN", Keys(kNs).Stream("t")}), 0);
  for (const std::string& id : ids) {
    EXPECT_EQ(Record(id).rfind("retry|t|1|", 0), 0u) << Record(id);
    auto errors = redis_.ErrorHistory(Keys(kNs).Errors(), id);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0]["kind"], "lease_expired");
    EXPECT_NE(errors[0]["error"].get<std::string>().find("crashed"), std::string::npos);
  }
  EXPECT_EQ(redis_.Integer({"ZCARD", Keys(kNs).Scheduled("t")}), 3);
}

TEST_F(ReaperTest, ReclaimedTaskWithoutRetriesLeftGoesDead) {
  std::vector<std::string> ids = Enqueue("d", 2, 0);
  Dequeue("d", "crashed", 2, 1000);
  std::this_thread::sleep_for(1100ms);
  Reaper::Options o = Opts();
  o.count = 1;  // forces RunOnce to call again while expired leases are left
  Reaper reaper(o);
  auto r = reaper.RunOnce(kNs, "d");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->reclaimed, 2);
  EXPECT_EQ(r->dead, 2);
  for (const std::string& id : ids) {
    EXPECT_FALSE(redis_.String({"ZSCORE", Keys(kNs).Dead("d"), id}).empty());
  }
}

TEST_F(ReaperTest, MissingStreamOrNoLeasesIsNothingToDo) {
  Reaper reaper(Opts());
  auto none = reaper.RunOnce(kNs, "nothing");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->reclaimed, 0);
  EXPECT_EQ(none->next_deadline_ms, -1);
  Enqueue("queued", 1, 0);  // queued, never delivered: no lease
  auto queued = reaper.RunOnce(kNs, "queued");
  ASSERT_TRUE(queued.ok()) << queued.status().ToString();
  EXPECT_EQ(queued->reclaimed, 0);
}

// The first bug: a reaper configured with a lease shorter than the worker's took back
// tasks of live workers. Now only the deadline in Redis counts, which the worker's heartbeats
// move: a reaper checking every 20 ms never takes the task while heartbeats come.
TEST_F(ReaperTest, AHeartbeatingWorkerKeepsItsTask) {
  std::vector<std::string> ids = Enqueue("hb", 1, 3);
  std::vector<fn::HeldTask> held = Dequeue("hb", "alive", 1, 2000);
  ASSERT_EQ(held.size(), 1u);
  Reaper::Options o = Opts();
  o.interval = 20ms;
  o.targets = {{{kNs, "hb"}, o.default_retry}};
  Reaper reaper(o);
  ASSERT_TRUE(reaper.Start().ok());
  for (int i = 0; i < 8; ++i) {  // 4 s: twice the lease
    std::this_thread::sleep_for(500ms);
    auto r = redis_.Command(fn::Extend(kNs, "hb", "g", "alive", 2000, held));
    ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
    ASSERT_EQ(r->elements, 1u) << "the task was taken from its live worker";
  }
  EXPECT_EQ(Record(ids[0]).rfind("queued|hb|0|" + held[0].sid, 0), 0u) << Record(ids[0]);
  EXPECT_TRUE(redis_.ErrorHistory(Keys(kNs).Errors(), ids[0]).empty());
  // No more heartbeats: taken back once the deadline passed, not before.
  const std::int64_t last_extend = testutil::ServerMs(redis_);
  const auto stopped = Clock::now();
  while (Record(ids[0]).rfind("queued|", 0) == 0 && Clock::now() - stopped < 5s) {
    std::this_thread::sleep_for(5ms);
  }
  const std::int64_t taken = testutil::ServerMs(redis_);
  reaper.Stop();
  EXPECT_EQ(Record(ids[0]).rfind("retry|hb|1|", 0), 0u) << Record(ids[0]);
  EXPECT_GE(taken - last_extend, 2000 - 50);  // last extend was just before last_extend
  EXPECT_LT(taken - last_extend, 2000 + 500);
}

// At rest a check is one round trip of plain reads (each type's pending count), no function call;
// a type with a pending task costs a reclaim call per check, whose next lease end is acted on when
// it comes, even between two checks.
TEST_F(ReaperTest, LoopReadsPendingCountsAndCallsReclaimOnlyForPendingTasks) {
  Enqueue("x", 1, 3);
  Reaper::Options o = Opts();
  o.interval = 1s;
  o.targets = {{{kNs, "x"}, o.default_retry},
               {{kNs, "idle1"}, o.default_retry},
               {{kNs, "idle2"}, o.default_retry},
               {{kNs, "idle3"}, o.default_retry}};
  Reaper reaper(o);
  ASSERT_TRUE(reaper.Start().ok());
  std::this_thread::sleep_for(200ms);
  const long long fcall0 = Calls("fcall");
  const long long checks0 = Calls("xinfo|groups");
  const long long time0 = Calls("time");
  std::this_thread::sleep_for(3000ms);
  EXPECT_EQ(Calls("fcall") - fcall0, 0) << "a function call at rest";
  EXPECT_GE(Calls("xinfo|groups") - checks0, 4 * 2);
  EXPECT_LE(Calls("xinfo|groups") - checks0, 4 * 4) << "more than one check per type per second";
  EXPECT_LE(Calls("time") - time0, 4);

  // A lease of 1.5 s: taken back within a few ms of its end, though types are checked only every
  // second: the reclaim call of the first check after the delivery says when the lease ends.
  std::int64_t deadline = 0;
  std::vector<fn::HeldTask> held = Dequeue("x", "crashed", 1, 1500, &deadline);
  const long long fcall1 = Calls("fcall");
  ASSERT_GT(deadline, 0);
  auto give_up = Clock::now() + 5s;
  while (PendingCount("x") > 0 && Clock::now() < give_up) std::this_thread::sleep_for(2ms);
  const std::int64_t taken = testutil::ServerMs(redis_);
  std::this_thread::sleep_for(200ms);
  reaper.Stop();
  EXPECT_EQ(PendingCount("x"), 0);
  EXPECT_EQ(Record(held[0].id).rfind("retry|x|1|", 0), 0u) << Record(held[0].id);
  EXPECT_GE(taken, deadline);
  EXPECT_LT(taken - deadline, 300) << "not taken back at its lease end but at a later check";
  // One reclaim per check while the task was pending (a check at most every second before its
  // lease ended), then the one at the lease end that took it back.
  EXPECT_GE(Calls("fcall") - fcall1, 2);
  EXPECT_LE(Calls("fcall") - fcall1, 4);
}

// A type with consumers but nothing pending costs one reclaim call per prune_every (which
// deletes the consumers of gone workers); a type without consumers costs none.
TEST_F(ReaperTest, LoopReclaimsATypeWithIdleConsumersOncePerPruneInterval) {
  Enqueue("p", 1, 3);
  std::vector<fn::HeldTask> held = Dequeue("p", "w1", 1, 30000);
  ASSERT_EQ(held.size(), 1u);
  auto acked = redis_.Command(fn::Ack(kNs, "p", "g", "w1", held));
  ASSERT_EQ(acked->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(PendingCount("p"), 0);
  Reaper::Options o = Opts();
  o.interval = 200ms;
  o.prune_every = 1s;
  o.targets = {{{kNs, "p"}, o.default_retry}, {{kNs, "none"}, o.default_retry}};
  Reaper reaper(o);
  const long long fcall0 = Calls("fcall");
  ASSERT_TRUE(reaper.Start().ok());
  std::this_thread::sleep_for(3500ms);
  reaper.Stop();
  // At start, then after 1, 2 and 3 s (checks every 200 ms): 4, give or take a check.
  const long long calls = Calls("fcall") - fcall0;
  EXPECT_GE(calls, 3);
  EXPECT_LE(calls, 5);
}

TEST_F(ReaperTest, LoopServesTheTypesOfItsSource) {
  Enqueue("a", 1, 3);
  Enqueue("b", 2, 3);
  Dequeue("a", "crashed", 1);
  Dequeue("b", "crashed", 2);
  // Nobody registered the namespace: the directory finds it by SCAN.
  auto endpoint = RedisEndpoint::Parse(redis_.url());
  auto conn = RedisConnection::Open(*endpoint);
  ASSERT_TRUE(conn.ok());
  TypeDirectory directory;
  ASSERT_TRUE(directory.Refresh(**conn, /*scan=*/true).ok());
  Reaper::Options o = Opts();
  o.types_source = [&] { return directory.Snapshot(); };
  std::atomic<int> reported{0};
  o.on_reclaimed = [&](const TypeRef&, const ReapResult& r) { reported += r.reclaimed; };
  Reaper reaper(o);
  ASSERT_TRUE(reaper.Start().ok());
  auto deadline = Clock::now() + 5s;
  while (Clock::now() < deadline && (PendingCount("a") + PendingCount("b")) > 0) {
    std::this_thread::sleep_for(10ms);
  }
  reaper.Stop();
  EXPECT_EQ(PendingCount("a"), 0);
  EXPECT_EQ(PendingCount("b"), 0);
  EXPECT_EQ(reported.load(), 3);
  EXPECT_EQ(redis_.Integer({"ZCARD", Keys(kNs).Scheduled("a")}) +
                redis_.Integer({"ZCARD", Keys(kNs).Scheduled("b")}),
            3);
}

TEST_F(ReaperTest, StartFailsOnABadUrl) {
  Reaper::Options o = Opts();
  o.redis.url = "http://nope";
  Reaper reaper(o);
  EXPECT_FALSE(reaper.Start().ok());
}

}  // namespace
}  // namespace baton::internal
