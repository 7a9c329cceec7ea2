// CronTicker against a real redis-server: RunOnce with a controlled `now`, and the loop in real
// time.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "broker/functions.h"
#include "broker/keys.h"
#include "harness/redis_server.h"
#include "harness/work_entry.h"
#include "scheduler/cron_ticker.h"

namespace baton::internal {
namespace {

using namespace std::chrono;
using baton::testing::RedisServer;

// 2030-01-01 12:00:00 UTC, a minute boundary.
const sys_seconds kT0 = sys_days{year{2030} / 1 / 1} + hours(12);

system_clock::time_point At(sys_seconds t, milliseconds extra = milliseconds(0)) {
  return system_clock::time_point(t.time_since_epoch() + extra);
}

std::int64_t Unix(sys_seconds t) { return t.time_since_epoch().count(); }

std::string Job(const std::string& schedule, const std::string& type,
                const std::string& missed = "skip", bool enabled = true) {
  return nlohmann::json{{"schedule", schedule},  {"namespace", "app"}, {"task_type", type},
                        {"payload", {{"k", 1}}}, {"missed", missed},   {"enabled", enabled}}
      .dump();
}

class CronTickerTest : public ::testing::Test {
 protected:
  void SetUp() override { redis_.LoadFunctions(); }

  CronTicker::Options Opts() {
    CronTicker::Options o;
    o.redis.url = redis_.url();
    o.grace = seconds(10);
    return o;
  }

  void Define(const std::string& name, const std::string& json) {
    redis_.Command({"HSET", "baton:cron", name, json});
  }

  // Task ids in a work stream, in stream order.
  std::vector<std::string> StreamIds(const std::string& type) {
    std::vector<std::string> ids;
    for (const auto& fields : StreamEntries(type)) ids.push_back(fields.at("id"));
    return ids;
  }

  std::vector<std::map<std::string, std::string>> StreamEntries(const std::string& type) {
    std::vector<std::map<std::string, std::string>> out;
    auto reply = redis_.Command({"XRANGE", Keys("app").Stream(type), "-", "+"});
    for (std::size_t i = 0; i < reply->elements; ++i) {
      out.push_back(baton::testing::WorkEntryFields(reply->element[i]->element[1]));
    }
    return out;
  }

  std::string State(const std::string& name) {
    return redis_.String({"HGET", std::string(kCronStateKey), name});
  }

  RedisServer redis_;
};

TEST_F(CronTickerTest, FiresEachDueTickOnce) {
  Define("minutely", Job("* * * * *", "report"));
  CronTicker ticker(Opts());

  // First sight: the job starts now, nothing of its past fires.
  auto first = ticker.RunOnce(At(kT0 + seconds(30)));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->fired.empty());
  EXPECT_EQ(first->enabled_jobs, 1);
  ASSERT_TRUE(first->next_fire.has_value());
  EXPECT_EQ(*first->next_fire, kT0 + minutes(1));
  EXPECT_EQ(State("minutely"), std::to_string(Unix(kT0 + seconds(30))));

  // Just after the tick: it fires.
  auto second = ticker.RunOnce(At(kT0 + minutes(1), milliseconds(3)));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_EQ(second->fired.size(), 1u);
  const CronFire& fire = second->fired[0];
  EXPECT_EQ(fire.job, "minutely");
  EXPECT_EQ(fire.tick, Unix(kT0 + minutes(1)));
  EXPECT_EQ(fire.task_id, "cron:minutely:" + std::to_string(Unix(kT0 + minutes(1))));
  EXPECT_FALSE(fire.duplicate);
  EXPECT_FALSE(fire.catch_up);
  EXPECT_EQ(State("minutely"), std::to_string(Unix(kT0 + minutes(1))));
  EXPECT_EQ(ticker.fired_total(), 1u);

  // Later in the same minute: nothing more.
  auto third = ticker.RunOnce(At(kT0 + minutes(1), milliseconds(900)));
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->fired.empty());

  // The task is an ordinary tracked task, tagged with its job and tick.
  auto entries = StreamEntries("report");
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].at("id"), fire.task_id);
  EXPECT_EQ(nlohmann::json::parse(entries[0].at("payload")), (nlohmann::json{{"k", 1}}));
  auto extra = nlohmann::json::parse(entries[0].at("extra"));
  EXPECT_EQ(extra["cron"]["job"], "minutely");
  EXPECT_EQ(extra["cron"]["tick"], Unix(kT0 + minutes(1)));
  EXPECT_EQ(entries[0].at("created_at"), std::to_string(Unix(kT0 + minutes(1))));
  EXPECT_FALSE(redis_.String({"HGET", Keys("app").Tasks(), fire.task_id}).empty());
}

TEST_F(CronTickerTest, TicksWithinGraceAllFire) {
  Define("fast", Job("* * * * * *", "ping"));  // every second
  CronTicker ticker(Opts());
  ASSERT_TRUE(ticker.RunOnce(At(kT0)).ok());
  // A pass 4 s late (a slow machine) still fires the 4 ticks it missed: they are within grace.
  auto late = ticker.RunOnce(At(kT0 + seconds(4), milliseconds(500)));
  ASSERT_TRUE(late.ok());
  ASSERT_EQ(late->fired.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(late->fired[i].tick, Unix(kT0 + seconds(i + 1)));
  EXPECT_TRUE(late->missed.empty());
  EXPECT_EQ(StreamIds("ping").size(), 4u);
}

TEST_F(CronTickerTest, SecondTickerGetsDuplicateForTheSameTick) {
  Define("minutely", Job("* * * * *", "report"));
  CronTicker a(Opts());
  CronTicker b(Opts());
  ASSERT_TRUE(a.RunOnce(At(kT0 + seconds(10))).ok());
  const std::string baseline = State("minutely");

  auto fired = a.RunOnce(At(kT0 + minutes(1), milliseconds(5)));
  ASSERT_TRUE(fired.ok());
  ASSERT_EQ(fired->fired.size(), 1u);
  EXPECT_FALSE(fired->fired[0].duplicate);

  // b read the state before a advanced it (simulated by putting the old value back): it enqueues
  // the same tick again and gets a duplicate; still one task.
  redis_.Command({"HSET", std::string(kCronStateKey), "minutely", baseline});
  auto again = b.RunOnce(At(kT0 + minutes(1), milliseconds(7)));
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->fired.size(), 1u);
  EXPECT_TRUE(again->fired[0].duplicate);
  EXPECT_EQ(again->fired[0].task_id, fired->fired[0].task_id);
  EXPECT_EQ(b.fired_total(), 0u);
  EXPECT_EQ(StreamIds("report").size(), 1u);
}

TEST_F(CronTickerTest, ConcurrentTickersProduceOneTaskPerTick) {
  Define("fast", Job("* * * * * *", "ping"));
  CronTicker a(Opts());
  CronTicker b(Opts());
  ASSERT_TRUE(a.RunOnce(At(kT0)).ok());
  std::uint64_t failures = 0;
  for (int s = 1; s <= 30; ++s) {
    // Both passes at once, at the same instant.
    StatusOr<CronRunResult> ra = Status::Internal("not run");
    StatusOr<CronRunResult> rb = Status::Internal("not run");
    std::thread ta([&] { ra = a.RunOnce(At(kT0 + seconds(s), milliseconds(2))); });
    std::thread tb([&] { rb = b.RunOnce(At(kT0 + seconds(s), milliseconds(2))); });
    ta.join();
    tb.join();
    failures += !ra.ok() + !rb.ok();
  }
  EXPECT_EQ(failures, 0u);
  std::vector<std::string> ids = StreamIds("ping");
  std::set<std::string> unique(ids.begin(), ids.end());
  EXPECT_EQ(ids.size(), 30u);
  EXPECT_EQ(unique.size(), 30u);
  EXPECT_EQ(a.fired_total() + b.fired_total(), 30u);
  for (int s = 1; s <= 30; ++s) {
    EXPECT_TRUE(unique.contains("cron:fast:" + std::to_string(Unix(kT0 + seconds(s)))));
  }
}

TEST_F(CronTickerTest, SkipDropsMissedTicksRunOnceFiresOneStandIn) {
  Define("skipper", Job("* * * * *", "skipped", "skip"));
  Define("catcher", Job("* * * * *", "caught", "run_once"));
  CronTicker ticker(Opts());
  ASSERT_TRUE(ticker.RunOnce(At(kT0 + seconds(5))).ok());

  // No scheduler ran for an hour; the pass comes 30 s after a tick (outside the 10 s grace).
  const sys_seconds back = kT0 + hours(1) + seconds(30);
  auto pass = ticker.RunOnce(At(back));
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  ASSERT_EQ(pass->fired.size(), 1u);
  const CronFire& standin = pass->fired[0];
  EXPECT_EQ(standin.job, "catcher");
  EXPECT_TRUE(standin.catch_up);
  EXPECT_EQ(standin.tick, Unix(kT0 + minutes(1)));  // the first missed tick: same id everywhere
  EXPECT_EQ(pass->missed.at("skipper"), Unix(kT0 + minutes(1)));
  EXPECT_EQ(pass->missed.at("catcher"), Unix(kT0 + minutes(1)));
  EXPECT_TRUE(StreamIds("skipped").empty());
  EXPECT_EQ(StreamIds("caught").size(), 1u);
  // Both states moved to the last tick before now: the missed hour is handled.
  EXPECT_EQ(State("skipper"), std::to_string(Unix(kT0 + hours(1))));
  EXPECT_EQ(State("catcher"), std::to_string(Unix(kT0 + hours(1))));

  // No second catch-up; the next tick fires normally for both.
  auto again = ticker.RunOnce(At(back + seconds(10)));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->fired.empty());
  auto next = ticker.RunOnce(At(kT0 + hours(1) + minutes(1), milliseconds(4)));
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->fired.size(), 2u);
  EXPECT_FALSE(next->fired[0].catch_up);
  EXPECT_FALSE(next->fired[1].catch_up);
  EXPECT_EQ(StreamIds("skipped").size(), 1u);
  EXPECT_EQ(StreamIds("caught").size(), 2u);
}

TEST_F(CronTickerTest, LongDowntimeOfPerSecondJobIsCheap) {
  Define("fast", Job("* * * * * *", "ping", "run_once"));
  CronTicker ticker(Opts());
  ASSERT_TRUE(ticker.RunOnce(At(kT0)).ok());
  auto start = steady_clock::now();
  auto pass = ticker.RunOnce(At(kT0 + days(400)));  // 34 million missed ticks
  ASSERT_TRUE(pass.ok());
  EXPECT_LT(steady_clock::now() - start, seconds(5));
  // The stand-in plus the on-time ticks within the grace (t-10 s exclusive .. t inclusive).
  ASSERT_EQ(pass->fired.size(), 11u);
  EXPECT_TRUE(pass->fired[0].catch_up);
  EXPECT_EQ(pass->fired[0].tick, Unix(kT0 + seconds(1)));
  EXPECT_EQ(State("fast"), std::to_string(Unix(kT0 + days(400))));
}

TEST_F(CronTickerTest, DisabledJobDoesNotFireAndDoesNotCatchUpWhenEnabled) {
  Define("nightly", Job("* * * * *", "report", "run_once"));
  CronTicker ticker(Opts());
  ASSERT_TRUE(ticker.RunOnce(At(kT0 + seconds(1))).ok());
  auto fired = ticker.RunOnce(At(kT0 + minutes(1), milliseconds(1)));
  ASSERT_TRUE(fired.ok());
  ASSERT_EQ(fired->fired.size(), 1u);

  Define("nightly", Job("* * * * *", "report", "run_once", /*enabled=*/false));
  for (int m = 2; m <= 90; m += 11) {
    auto pass = ticker.RunOnce(At(kT0 + minutes(m), milliseconds(1)));
    ASSERT_TRUE(pass.ok());
    EXPECT_TRUE(pass->fired.empty()) << "minute " << m;
    EXPECT_EQ(pass->enabled_jobs, 0);
    EXPECT_FALSE(pass->next_fire.has_value());
  }
  // The loop passes at least once a second: one more pass just before the job is enabled again.
  ASSERT_TRUE(ticker.RunOnce(At(kT0 + minutes(95), seconds(29))).ok());
  EXPECT_EQ(StreamIds("report").size(), 1u);

  // Enabled again: no catch-up for the time it was off, only the ticks from now on.
  Define("nightly", Job("* * * * *", "report", "run_once", /*enabled=*/true));
  auto back = ticker.RunOnce(At(kT0 + minutes(95), seconds(30)));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->fired.empty());
  EXPECT_TRUE(back->missed.empty());
  auto next = ticker.RunOnce(At(kT0 + minutes(96), milliseconds(2)));
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->fired.size(), 1u);
  EXPECT_EQ(next->fired[0].tick, Unix(kT0 + minutes(96)));
}

TEST_F(CronTickerTest, NeverEnabledJobDoesNotFire) {
  Define("off", Job("* * * * * *", "never", "run_once", /*enabled=*/false));
  CronTicker ticker(Opts());
  for (int s = 0; s < 120; s += 7) {
    auto pass = ticker.RunOnce(At(kT0 + seconds(s)));
    ASSERT_TRUE(pass.ok());
    EXPECT_TRUE(pass->fired.empty());
  }
  EXPECT_TRUE(StreamIds("never").empty());
  EXPECT_EQ(State("off"), "");
}

TEST_F(CronTickerTest, EditedJobIsPickedUp) {
  Define("job", Job("* * * * *", "old_type"));
  CronTicker ticker(Opts());
  ASSERT_TRUE(ticker.RunOnce(At(kT0 + seconds(1))).ok());
  ASSERT_EQ(ticker.RunOnce(At(kT0 + minutes(1)))->fired.size(), 1u);

  // Edited: every 5 seconds, another task type. Picked up by the next pass, no restart.
  Define("job", Job("*/5 * * * * *", "new_type"));
  auto pass = ticker.RunOnce(At(kT0 + minutes(1) + seconds(5), milliseconds(1)));
  ASSERT_TRUE(pass.ok());
  ASSERT_EQ(pass->fired.size(), 1u);
  EXPECT_EQ(pass->fired[0].task_type, "new_type");
  EXPECT_EQ(pass->fired[0].tick, Unix(kT0 + minutes(1) + seconds(5)));
  ASSERT_TRUE(pass->next_fire.has_value());
  EXPECT_EQ(*pass->next_fire, kT0 + minutes(1) + seconds(10));
  EXPECT_EQ(StreamIds("old_type").size(), 1u);
  EXPECT_EQ(StreamIds("new_type").size(), 1u);

  // Deleted: nothing fires any more.
  redis_.Command({"HDEL", "baton:cron", "job"});
  auto gone = ticker.RunOnce(At(kT0 + minutes(2), milliseconds(1)));
  ASSERT_TRUE(gone.ok());
  EXPECT_TRUE(gone->fired.empty());
  EXPECT_EQ(gone->enabled_jobs, 0);
}

TEST_F(CronTickerTest, InvalidDefinitionIsReportedAndOthersStillFire) {
  Define("broken", R"({"schedule": "61 * * * *", "namespace": "app", "task_type": "x"})");
  Define("notjson", "{");
  Define("good", Job("* * * * *", "report"));
  CronTicker ticker(Opts());
  ASSERT_TRUE(ticker.RunOnce(At(kT0 + seconds(1))).ok());
  auto pass = ticker.RunOnce(At(kT0 + minutes(1)));
  ASSERT_TRUE(pass.ok());
  EXPECT_EQ(pass->invalid.size(), 2u);
  EXPECT_NE(pass->invalid.at("broken").find("minute"), std::string::npos)
      << pass->invalid.at("broken");
  EXPECT_TRUE(pass->invalid.contains("notjson"));
  ASSERT_EQ(pass->fired.size(), 1u);
  EXPECT_EQ(pass->fired[0].job, "good");
}

TEST_F(CronTickerTest, NamespaceFilter) {
  Define("mine", Job("* * * * *", "report"));  // namespace "app"
  Define("theirs",
         nlohmann::json{{"schedule", "* * * * *"}, {"namespace", "other"}, {"task_type", "report"}}
             .dump());
  CronTicker::Options o = Opts();
  o.namespaces = {"app"};
  CronTicker ticker(o);
  ASSERT_TRUE(ticker.RunOnce(At(kT0 + seconds(1))).ok());
  auto pass = ticker.RunOnce(At(kT0 + minutes(1)));
  ASSERT_TRUE(pass.ok());
  ASSERT_EQ(pass->fired.size(), 1u);
  EXPECT_EQ(pass->fired[0].job, "mine");
  EXPECT_EQ(pass->enabled_jobs, 1);
  EXPECT_EQ(State("theirs"), "");  // left entirely to the schedulers of its namespace
}

TEST_F(CronTickerTest, StateOnlyMovesForward) {
  Define("minutely", Job("* * * * *", "report"));
  CronTicker ticker(Opts());
  ASSERT_TRUE(ticker.RunOnce(At(kT0 + seconds(1))).ok());
  // Another ticker already handled up to 12:05.
  redis_.Command(
      {"HSET", std::string(kCronStateKey), "minutely", std::to_string(Unix(kT0 + minutes(5)))});
  auto pass = ticker.RunOnce(At(kT0 + minutes(3), milliseconds(1)));  // a ticker behind the others
  ASSERT_TRUE(pass.ok());
  EXPECT_TRUE(pass->fired.empty());
  EXPECT_EQ(State("minutely"), std::to_string(Unix(kT0 + minutes(5))));
}

// The compare-and-set the tickers share (baton_v2_cron_mark): 1 when it moved the state, 0 when
// the state already was at or past the tick.
TEST_F(CronTickerTest, CronMarkOnlyMovesForward) {
  EXPECT_EQ(redis_.Integer(fn::CronMark("job", 100)), 1);
  EXPECT_EQ(State("job"), "100");
  EXPECT_EQ(redis_.Integer(fn::CronMark("job", 100)), 0);
  EXPECT_EQ(redis_.Integer(fn::CronMark("job", 99)), 0);
  EXPECT_EQ(State("job"), "100");
  EXPECT_EQ(redis_.Integer(fn::CronMark("job", 160)), 1);
  EXPECT_EQ(State("job"), "160");
}

TEST_F(CronTickerTest, RedisDownIsUnavailable) {
  CronTicker ticker(Opts());
  ASSERT_TRUE(ticker.RunOnce(At(kT0)).ok());
  redis_.Kill();
  auto pass = ticker.RunOnce(At(kT0 + seconds(1)));
  ASSERT_FALSE(pass.ok());
  EXPECT_EQ(pass.status().code(), StatusCode::kUnavailable) << pass.status().ToString();
}

TEST_F(CronTickerTest, LoopFiresEverySecondInRealTime) {
  CronTicker::Options o = Opts();
  CronTicker ticker(o);
  ASSERT_TRUE(ticker.Start().ok());
  Define("fast", Job("* * * * * *", "ping"));
  std::this_thread::sleep_for(milliseconds(4000));
  ticker.Stop();
  std::vector<std::string> ids = StreamIds("ping");
  std::set<std::string> unique(ids.begin(), ids.end());
  EXPECT_EQ(unique.size(), ids.size());
  EXPECT_GE(ids.size(), 2u);
  EXPECT_LE(ids.size(), 5u);
}

TEST_F(CronTickerTest, ChangedMessageWakesTheLoop) {
  CronTicker::Options o = Opts();
  o.max_sleep = seconds(60);  // without the message, the edit would be seen a minute later
  CronTicker ticker(o);
  ASSERT_TRUE(ticker.Start().ok());
  std::this_thread::sleep_for(milliseconds(300));  // the loop has run its first pass: no jobs
  Define("fast", Job("* * * * * *", "ping"));
  redis_.Command({"PUBLISH", std::string(kCronChangedChannel), "fast"});
  auto deadline = steady_clock::now() + seconds(10);
  while (StreamIds("ping").empty() && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  ticker.Stop();
  EXPECT_FALSE(StreamIds("ping").empty());
}

TEST_F(CronTickerTest, StopIsPrompt) {
  CronTicker::Options o = Opts();
  o.max_sleep = seconds(60);
  CronTicker ticker(o);
  ASSERT_TRUE(ticker.Start().ok());
  std::this_thread::sleep_for(milliseconds(200));
  auto start = steady_clock::now();
  ticker.Stop();
  EXPECT_LT(steady_clock::now() - start, seconds(2));
}

}  // namespace
}  // namespace baton::internal
