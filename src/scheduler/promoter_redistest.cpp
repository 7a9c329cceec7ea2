// The promoter against a real redis-server: RunOnce, the sleep-until-due loop woken early by
// baton:v2:wakeup, silence at rest (no polling), and two promoters racing over the same due tasks.
#include <gtest/gtest.h>

#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "baton/client.h"
#include "broker/keys.h"
#include "harness/redis_server.h"
#include "harness/work_entry.h"
#include "scheduler/promoter.h"
#include "scheduler/scheduler_test_util.h"
#include "scheduler/type_directory.h"

namespace baton::internal {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using baton::testing::RedisServer;

constexpr const char* kNs = "pt";

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() > deadline) return done();
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

class PromoterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    redis_.LoadFunctions();
    ClientOptions options;
    options.redis.url = redis_.url();
    auto client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }

  // Enqueues `n` tasks of `type` due at `run_at` (one pipelined batch).
  void EnqueueAt(const std::string& type, int n, std::chrono::system_clock::time_point run_at) {
    std::vector<TaskRequest> reqs(static_cast<std::size_t>(n));
    for (auto& r : reqs) {
      r.ns = kNs;
      r.task_type = type;
      r.options.run_at = run_at;
    }
    auto res = client_->EnqueueMany(reqs);
    ASSERT_TRUE(res.ok()) << res.status().ToString();
    for (const auto& one : *res) ASSERT_EQ(one.outcome, EnqueueOutcome::kScheduled);
  }

  Promoter::Options Opts() const {
    Promoter::Options o;
    o.redis.url = redis_.url();
    return o;
  }
  long long Len(const std::string& type) {
    return redis_.Integer({"XLEN", Keys(kNs).Stream(type)});
  }
  long long Scheduled(const std::string& type) {
    return redis_.Integer({"ZCARD", Keys(kNs).Scheduled(type)});
  }
  // FCALLs Redis has run so far (INFO commandstats).
  long long FcallCount() {
    std::string info = redis_.String({"INFO", "commandstats"});
    std::size_t at = info.find("cmdstat_fcall:calls=");
    if (at == std::string::npos) return 0;
    return std::stoll(info.substr(at + std::string("cmdstat_fcall:calls=").size()));
  }

  RedisServer redis_;
  std::unique_ptr<Client> client_;
};

TEST_F(PromoterTest, RunOnceMovesOnlyDueTasksAndReportsTheNextDueTime) {
  auto now = std::chrono::system_clock::now();
  EnqueueAt("t", 5, now + 200ms);
  EnqueueAt("t", 1, now + 60s);
  Promoter::Options o = Opts();
  o.limit = 2;  // forces RunOnce to loop: 2 + 2 + 1
  Promoter promoter(o);

  auto early = promoter.RunOnce(kNs, "t");
  ASSERT_TRUE(early.ok()) << early.status().ToString();
  EXPECT_EQ(early->promoted, 0);
  EXPECT_GT(early->next_due_ms, early->now_ms);

  std::this_thread::sleep_for(300ms);
  auto due = promoter.RunOnce(kNs, "t");
  ASSERT_TRUE(due.ok()) << due.status().ToString();
  EXPECT_EQ(due->promoted, 5);
  EXPECT_EQ(Len("t"), 5);
  EXPECT_EQ(Scheduled("t"), 1);
  EXPECT_GE(due->next_due_ms - due->now_ms, 55000);  // the 60 s task is next
  EXPECT_EQ(promoter.promoted_total(), 5u);

  auto empty = promoter.RunOnce(kNs, "other");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->promoted, 0);
  EXPECT_EQ(empty->next_due_ms, -1);
}

// batond's wiring: the types come from a TypeDirectory, which finds a namespace nobody
// registered in baton:v2:namespaces.
TEST_F(PromoterTest, RunPassServesTheTypesOfItsSource) {
  const std::int64_t soon = testutil::ServerMs(redis_) + 300;
  testutil::RawEnqueue(redis_, kNs, "a", 2, soon);
  testutil::RawEnqueue(redis_, kNs, "b", 3, soon);
  ASSERT_EQ(redis_.Integer({"SCARD", std::string(Keys::kNamespaces)}), 0);
  auto endpoint = RedisEndpoint::Parse(redis_.url());
  auto conn = RedisConnection::Open(*endpoint);
  ASSERT_TRUE(conn.ok());
  TypeDirectory directory;
  ASSERT_TRUE(directory.Refresh(**conn, /*scan=*/true).ok());
  std::this_thread::sleep_for(400ms);
  Promoter::Options o = Opts();
  o.types_source = [&] { return directory.Snapshot(); };
  Promoter promoter(o);
  auto pass = promoter.RunPass();
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_EQ(pass->promoted, 5);
  EXPECT_EQ(pass->next_due_ms, -1);
  EXPECT_EQ(Len("a"), 2);
  EXPECT_EQ(Len("b"), 3);
}

TEST_F(PromoterTest, LoopWakesUpForAnEarlierTask) {
  auto now = std::chrono::system_clock::now();
  EnqueueAt("w", 1, now + 10s);
  Promoter::Options o = Opts();
  o.interval = 30s;  // only the wake-up message can make it run before the 10 s task is due
  o.types = {{kNs, "w"}};
  Promoter promoter(o);
  ASSERT_TRUE(promoter.Start().ok());
  std::this_thread::sleep_for(300ms);  // the loop is now sleeping until +10 s

  auto due = std::chrono::system_clock::now() + 300ms;
  EnqueueAt("w", 1, due);
  ASSERT_TRUE(WaitUntil([&] { return Len("w") == 1; }, 3s));
  auto late = std::chrono::system_clock::now() - due;
  EXPECT_GE(late, -20ms);  // never before it is due (Redis' clock decides, same host)
  EXPECT_LT(late, 400ms) << "promoted "
                         << std::chrono::duration_cast<std::chrono::milliseconds>(late).count()
                         << " ms after due";
  EXPECT_EQ(Scheduled("w"), 1);  // the 10 s one still waits
  promoter.Stop();
}

// Regression: a pass over no type reported no server clock, the loop planned its wake-up at
// "1970 + interval" and ignored every wake-up message until the next interval, so the first
// delayed task of a brand-new type fired up to one interval late. Here the source lists the type
// before its first task is enqueued, but nothing pokes the promoter: only the message wakes it.
TEST_F(PromoterTest, FirstDelayedTaskOfANewTypeWakesAnIdlePromoter) {
  std::mutex mu;
  std::vector<TypeRef> served;
  Promoter::Options o = Opts();
  o.interval = 30s;  // only the wake-up message can make it run in time
  o.types_source = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return served;
  };
  Promoter promoter(o);
  ASSERT_TRUE(promoter.Start().ok());
  std::this_thread::sleep_for(300ms);  // the loop has run its empty pass and sleeps
  {
    std::lock_guard<std::mutex> lock(mu);
    served.push_back({kNs, "fresh"});
  }
  auto due = std::chrono::system_clock::now() + 300ms;
  EnqueueAt("fresh", 1, due);
  ASSERT_TRUE(WaitUntil([&] { return Len("fresh") == 1; }, 5s));
  auto late = std::chrono::system_clock::now() - due;
  EXPECT_LT(late, 400ms) << "promoted "
                         << std::chrono::duration_cast<std::chrono::milliseconds>(late).count()
                         << " ms after due";
  promoter.Stop();
}

// The promoter does not poll: at rest (nothing due, no message) it sends no command until its
// safety interval; a due time it knows of costs one call of that type only.
TEST_F(PromoterTest, SilentAtRestAndCallsOnlyTheDueType) {
  auto now = std::chrono::system_clock::now();
  EnqueueAt("far", 1, now + 60s);
  Promoter::Options o = Opts();
  o.interval = 30s;
  o.types = {{kNs, "far"}, {kNs, "idle1"}, {kNs, "idle2"}, {kNs, "soon"}};
  Promoter promoter(o);
  ASSERT_TRUE(promoter.Start().ok());
  std::this_thread::sleep_for(300ms);  // the first pass (one call per type) is done
  const long long at_rest = FcallCount();
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(FcallCount() - at_rest, 0) << "the promoter polled";

  // A task due in 500 ms: its enqueue (1 FCALL) wakes the promoter, which plans for it, then one
  // promote call of that type when it is due.
  EnqueueAt("soon", 1, std::chrono::system_clock::now() + 500ms);
  ASSERT_TRUE(WaitUntil([&] { return Len("soon") == 1; }, 3s));
  std::this_thread::sleep_for(300ms);
  EXPECT_LE(FcallCount() - at_rest, 1 + 2) << "enqueue + at most two promote calls";
  EXPECT_EQ(promoter.promoted_total(), 1u);
  promoter.Stop();
}

TEST_F(PromoterTest, LoopSleepsUntilTheEarliestDueTime) {
  auto now = std::chrono::system_clock::now();
  auto due = now + 700ms;
  EnqueueAt("s", 1, due);
  Promoter::Options o = Opts();
  o.interval = 30s;
  o.types = {{kNs, "s"}};
  Promoter promoter(o);
  ASSERT_TRUE(promoter.Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return Len("s") == 1; }, 3s));
  auto late = std::chrono::system_clock::now() - due;
  EXPECT_GE(late, -20ms);
  EXPECT_LT(late, 400ms);
  promoter.Stop();
}

TEST_F(PromoterTest, TwoPromotersNeverPromoteATaskTwice) {
  constexpr int kN = 2000;
  EnqueueAt("race", kN, std::chrono::system_clock::now() + 60s);
  // Make them all due now (scores are due times): enqueueing 2000 may take longer than any short
  // delay on a loaded machine, and a task enqueued past its due time goes straight to the stream.
  const std::string sched = Keys(kNs).Scheduled("race");
  redis_.Command({"ZUNIONSTORE", sched, "1", sched, "WEIGHTS", "0"});
  Promoter::Options o = Opts();
  o.limit = 50;
  Promoter p1(o);
  Promoter p2(o);
  std::int64_t n1 = 0;
  std::int64_t n2 = 0;
  std::thread t1([&] {
    auto r = p1.RunOnce(kNs, "race");
    n1 = r.ok() ? r->promoted : -1;
  });
  std::thread t2([&] {
    auto r = p2.RunOnce(kNs, "race");
    n2 = r.ok() ? r->promoted : -1;
  });
  t1.join();
  t2.join();
  ASSERT_GE(n1, 0);
  ASSERT_GE(n2, 0);
  EXPECT_EQ(n1 + n2, kN);
  EXPECT_EQ(Len("race"), kN);
  EXPECT_EQ(Scheduled("race"), 0);
  auto entries = redis_.Command({"XRANGE", Keys(kNs).Stream("race"), "-", "+"});
  std::set<std::string> ids;
  for (std::size_t i = 0; i < entries->elements; ++i) {
    auto fields = baton::testing::WorkEntryFields(entries->element[i]->element[1]);
    ASSERT_EQ(fields.count("id"), 1u) << fields["task"];
    ids.insert(fields["id"]);
  }
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kN));  // each task exactly once
}

}  // namespace
}  // namespace baton::internal
