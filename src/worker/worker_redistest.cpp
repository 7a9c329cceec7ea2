// The worker's happy paths against a real redis-server: tasks run and are acked, retries, type
// isolation, malformed entries, graceful shutdown, delayed tasks, heartbeats.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "harness/work_entry.h"
#include "worker/worker_test_util.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST_F(WorkerTest, RunsTasksAndAcksThem) {
  std::mutex mu;
  std::set<std::string> seen;
  std::atomic<bool> payload_ok{true};
  Worker worker(Options());
  ASSERT_TRUE(worker
                  .Register(kNs, "echo",
                            [&](TaskContext& ctx) {
                              const Task& t = ctx.task();
                              if (t.ns != kNs || t.task_type != "echo" || ctx.attempt() != 1 ||
                                  t.Payload().value("n", -1) < 0) {
                                payload_ok = false;
                              }
                              std::lock_guard<std::mutex> lock(mu);
                              seen.insert(t.task_id);
                              return Status::Ok();
                            })
                  .ok());
  ASSERT_TRUE(worker.Start().ok());
  std::vector<std::string> ids;
  for (int i = 0; i < 50; ++i) ids.push_back(Enqueue("echo", {{"n", i}}));

  ASSERT_TRUE(WaitUntil([&] { return worker.stats().succeeded == 50; }));
  for (const std::string& id : ids) {
    ASSERT_TRUE(IsDone(id)) << id;
    std::optional<Finish> finish = DoneBy(id);
    ASSERT_TRUE(finish.has_value()) << id;
    EXPECT_EQ(finish->attempts, 1);
    EXPECT_EQ(finish->worker, worker.consumer_name());
  }
  EXPECT_TRUE(payload_ok);
  EXPECT_EQ(seen.size(), 50u);
  EXPECT_EQ(redis_.Integer({"HLEN", keys().Tasks()}), 0);  // records gone
  EXPECT_EQ(StreamLength("echo"), 0);
  EXPECT_EQ(Pending("echo"), 0);
  // Every lease released: nothing pending (above), and leases:TYPE holds no per-task entry, only
  // the lease length this worker's consumer asked for (the namespace's 30 s).
  EXPECT_EQ(redis_.Integer({"HLEN", keys().Leases("echo")}), 1);
  EXPECT_EQ(redis_.String({"HGET", keys().Leases("echo"), worker.consumer_name()}), "30000");
  worker.Stop();
  WorkerStats s = worker.stats();
  EXPECT_EQ(s.failed, 0u);
  EXPECT_EQ(s.malformed, 0u);
  // The worker registered its namespace (a convenience for the CLI).
  EXPECT_EQ(redis_.Integer({"SISMEMBER", std::string(internal::Keys::kNamespaces), kNs}), 1);
}

TEST_F(WorkerTest, ConsumerNameHasServiceHostPidRandomSuffixAndLanguage) {
  WorkerOptions o = Options();
  o.service = "billing";
  Worker worker(o);
  const std::string& name = worker.consumer_name();
  char host[256] = {0};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  const std::string prefix = "billing:" + std::string(host) + ":" + std::to_string(getpid()) + ":";
  ASSERT_EQ(name.rfind(prefix, 0), 0u) << name;
  const std::string rest = name.substr(prefix.size());  // "<6 hex>:cpp"
  ASSERT_EQ(rest.size(), 10u) << name;
  EXPECT_EQ(rest.find_first_not_of("0123456789abcdef"), 6u) << name;
  EXPECT_EQ(rest.substr(6), ":cpp") << name;
  EXPECT_NE(Worker(o).consumer_name(), name);
}

TEST_F(WorkerTest, RetriesThenSucceeds) {
  std::vector<int> attempts;
  std::mutex mu;
  Worker worker(Options());
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "flaky",
                      [&](TaskContext& ctx) {
                        std::lock_guard<std::mutex> lock(mu);
                        attempts.push_back(ctx.attempt());
                        if (ctx.attempt() < 3) return Status::Internal("not yet");
                        return Status::Ok();
                      },
                      FastRetry())
                  .ok());
  ASSERT_TRUE(worker.Start().ok());
  std::string id = Enqueue("flaky", {{"x", 1}});
  ASSERT_TRUE(WaitUntil([&] { return IsDone(id); }));
  ASSERT_TRUE(DoneBy(id).has_value());
  EXPECT_EQ(DoneBy(id)->attempts, 3);
  ASSERT_TRUE(WaitUntil([&] { return worker.stats().succeeded == 1; }));
  EXPECT_EQ(worker.stats().failed, 2u);
  EXPECT_EQ(worker.stats().dead, 0u);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(attempts, (std::vector<int>{1, 2, 3}));
}

TEST_F(WorkerTest, SlowBacklogOfOneTypeDoesNotDelayAnother) {
  std::atomic<int> slow_started{0};
  std::mutex mu;
  std::vector<Clock::duration> latencies;
  std::map<std::string, Clock::time_point> enqueued_at;

  Worker worker(Options());
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "slow",
                      [&](TaskContext&) {
                        ++slow_started;
                        std::this_thread::sleep_for(20ms);
                        return Status::Ok();
                      },
                      FastRetry(1))
                  .ok());
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "fast",
                      [&](TaskContext& ctx) {
                        auto now = Clock::now();
                        std::lock_guard<std::mutex> lock(mu);
                        latencies.push_back(now - enqueued_at.at(ctx.task().task_id));
                        return Status::Ok();
                      },
                      FastRetry(2))
                  .ok());
  std::vector<TaskRequest> backlog(200);
  for (auto& r : backlog) {
    r.ns = kNs;
    r.task_type = "slow";
  }
  ASSERT_TRUE(client_->EnqueueMany(backlog).ok());
  ASSERT_TRUE(worker.Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return slow_started >= 3; }));

  for (int i = 0; i < 10; ++i) {
    EnqueueOptions opts;
    opts.task_id = "fast-" + std::to_string(i);
    {
      std::lock_guard<std::mutex> lock(mu);
      enqueued_at[*opts.task_id] = Clock::now();
    }
    Enqueue("fast", {{"i", i}}, opts);
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard<std::mutex> lock(mu);
    return latencies.size() == 10;
  }));
  // The slow type still has most of its 4 s backlog, yet every fast task started promptly.
  EXPECT_GT(StreamLength("slow"), 100);
  std::lock_guard<std::mutex> lock(mu);
  for (auto l : latencies) EXPECT_LT(l, 1s);
  worker.Stop();
}

TEST_F(WorkerTest, MalformedEntriesGoToTheDeadLetterQueue) {
  std::atomic<int> ran{0};
  Worker worker(Options());
  ASSERT_TRUE(worker.Register(kNs, "m", CountRuns(&ran)).ok());
  // Written before the worker starts: it must not see an entry before its record exists.
  const std::string stream = keys().Stream("m");
  // 1. A missing field (no payload), and no task record: baton_v2_start buries it under the id
  // of its task field.
  auto r1 = redis_.Command(
      {"XADD", stream, "*", "task", WorkEntryTask("raw-1", "3", "0", "1722489600", "", "0", "")});
  ASSERT_EQ(r1->type, REDIS_REPLY_STRING);
  // 1b. An entry in another format altogether (one field per value, no task field): buried too,
  // under malformed-SID since it names no task id the functions can read.
  auto r1b = redis_.Command({"XADD", stream, "*", "id", "raw-2", "payload", "{}"});
  ASSERT_EQ(r1b->type, REDIS_REPLY_STRING);
  const std::string foreign = "malformed-" + std::string(r1b->str, r1b->len);
  // 2. and 3. Both fields and a record, but a payload that is not a JSON object: the worker's
  // decoder refuses it and fails it as malformed.
  ASSERT_FALSE(AddQueuedByHand("m", "bad-json", "{not json").empty());
  ASSERT_FALSE(AddQueuedByHand("m", "not-object", "[1,2,3]").empty());
  // A good task afterwards still runs: the worker kept going.
  std::string good = Enqueue("m", {{"ok", true}});
  ASSERT_TRUE(worker.Start().ok());

  ASSERT_TRUE(WaitUntil([&] { return IsDone(good); }));
  ASSERT_TRUE(WaitUntil([&] { return IsDead("m", "bad-json") && IsDead("m", "not-object"); }));
  EXPECT_TRUE(IsDead("m", "raw-1"));
  EXPECT_TRUE(IsDead("m", foreign));
  EXPECT_FALSE(IsDead("m", "raw-2"));
  EXPECT_NE(Errors("raw-1")[0]["error"].get<std::string>().find("missing field payload"),
            std::string::npos)
      << Errors("raw-1").dump();
  EXPECT_NE(Errors(foreign)[0]["error"].get<std::string>().find("missing field task"),
            std::string::npos)
      << Errors(foreign).dump();
  for (const std::string& id :
       {std::string("raw-1"), foreign, std::string("bad-json"), std::string("not-object")}) {
    nlohmann::json errors = Errors(id);
    ASSERT_EQ(errors.size(), 1u) << id << " " << errors.dump();
    EXPECT_EQ(errors[0]["kind"], "malformed") << id;
    EXPECT_FALSE(errors[0]["error"].get<std::string>().empty()) << id;
  }
  EXPECT_NE(Errors("bad-json")[0]["error"].get<std::string>().find("payload"), std::string::npos)
      << Errors("bad-json").dump();
  EXPECT_EQ(ran, 1);
  ASSERT_TRUE(WaitUntil([&] { return worker.stats().dead == 2; }));
  EXPECT_EQ(worker.stats().malformed, 4u);  // all four: the worker reads the stream itself
  EXPECT_EQ(Pending("m"), 0);
  worker.Stop();
}

TEST_F(WorkerTest, StopWaitsForInFlightTasksAndAcksThem) {
  std::atomic<int> started{0};
  std::atomic<int> finished{0};
  Worker worker(Options());
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "work",
                      [&](TaskContext&) {
                        ++started;
                        std::this_thread::sleep_for(300ms);
                        ++finished;
                        return Status::Ok();
                      },
                      FastRetry(2))
                  .ok());
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(Enqueue("work", {{"i", i}}));
  ASSERT_TRUE(worker.Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return started == 2; }));
  worker.Stop();
  EXPECT_EQ(started, 2);  // no new task after Stop()
  EXPECT_EQ(finished, 2);
  int done = 0;
  for (const std::string& id : ids) done += IsDone(id) ? 1 : 0;
  EXPECT_EQ(done, 2);  // the in-flight ones were acked before Stop() returned
  EXPECT_EQ(Pending("work"), 0);
  EXPECT_EQ(StreamLength("work"), 3);  // the rest wait for the next worker
  EXPECT_EQ(worker.stats().succeeded, 2u);
}

TEST_F(WorkerTest, AQuickTaskIsAckedWhileALongOneOfTheSameBatchRuns) {
  // Two entries in one read: the quick one's ack must not wait for the long one, whichever
  // handler thread runs which (the fetcher is woken when the batch is taken, not per completion).
  std::atomic<bool> release{false};
  Worker worker(Options());
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "mixed",
                      [&](TaskContext& ctx) {
                        if (ctx.task().Payload().value("slow", false)) {
                          while (!release && !ctx.cancelled()) std::this_thread::sleep_for(5ms);
                        }
                        return Status::Ok();
                      },
                      FastRetry(2))
                  .ok());
  const std::string quick = Enqueue("mixed", {{"slow", false}});
  const std::string slow = Enqueue("mixed", {{"slow", true}});
  ASSERT_TRUE(worker.Start().ok());
  EXPECT_TRUE(WaitUntil([&] { return IsDone(quick); }, 2000ms));
  EXPECT_FALSE(IsDone(slow));
  release = true;
  EXPECT_TRUE(WaitUntil([&] { return IsDone(slow); }));
  worker.Stop();
}

TEST_F(WorkerTest, StopAfterGraceCancelsAndLeavesTheTaskToTheLease) {
  std::atomic<bool> saw_cancel{false};
  std::atomic<bool> running{false};
  WorkerOptions o = Options();
  o.shutdown_grace = 200ms;
  Worker worker(o);
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "long",
                      [&](TaskContext& ctx) {
                        running = true;
                        while (!ctx.cancelled()) std::this_thread::sleep_for(5ms);
                        saw_cancel = true;
                        return Status(StatusCode::kCancelled, "stopped");
                      },
                      FastRetry(0, 5000))
                  .ok());
  std::string id = Enqueue("long", {});
  ASSERT_TRUE(worker.Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return running.load(); }));
  auto t0 = Clock::now();
  worker.Stop();
  EXPECT_LT(Clock::now() - t0, 3s);
  EXPECT_TRUE(WaitUntil([&] { return saw_cancel.load(); }, 2s));
  // Not acked and not failed: still leased to this consumer until the lease runs out.
  EXPECT_FALSE(IsDone(id));
  EXPECT_EQ(Pending("long"), 1);
  EXPECT_GT(LeaseDeadline("long", id), RedisNowMs());
  EXPECT_EQ(Errors(id).size(), 0u);
}

TEST_F(WorkerTest, DelayedTaskRunsAfterItsDelayThroughTheInProcessPromoter) {
  std::atomic<bool> ran{false};
  Worker worker(Options());
  std::atomic<Clock::rep> ran_at{0};
  ASSERT_TRUE(worker
                  .Register(kNs, "later",
                            [&](TaskContext&) {
                              ran_at = Clock::now().time_since_epoch().count();
                              ran = true;
                              return Status::Ok();
                            })
                  .ok());
  ASSERT_TRUE(worker.Start().ok());
  EnqueueOptions opts;
  opts.delay_seconds = 1;
  auto t0 = Clock::now();
  std::string id = Enqueue("later", {}, opts);
  EXPECT_EQ(redis_.Integer({"ZCARD", keys().Scheduled("later")}), 1);
  ASSERT_TRUE(WaitUntil([&] { return IsDone(id); }, 5s));
  auto waited = Clock::time_point(Clock::duration(ran_at.load())) - t0;
  EXPECT_GE(waited, 950ms);
  EXPECT_LT(waited, 3s);
}

TEST_F(WorkerTest, HeartbeatsKeepALongTaskLeased) {
  // The task runs 2.5 leases long (the shortest lease there is); the worker's own maintenance
  // reclaims every lease that ends, so only the heartbeats keep this one.
  std::atomic<int> runs{0};
  Worker worker(Options());
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "long",
                      [&](TaskContext& ctx) {
                        ++runs;
                        std::this_thread::sleep_for(2500ms);
                        return ctx.cancelled() ? Status::Internal("lease lost") : Status::Ok();
                      },
                      FastRetry(0, 1000))
                  .ok());
  ASSERT_TRUE(worker.Start().ok());
  std::string id = Enqueue("long", {});
  ASSERT_TRUE(WaitUntil([&] { return IsDone(id); }, 6s));
  EXPECT_EQ(runs, 1);
  ASSERT_TRUE(DoneBy(id).has_value());
  EXPECT_EQ(DoneBy(id)->attempts, 1);
  EXPECT_EQ(Errors(id).size(), 0u);
}

TEST_F(WorkerTest, SurvivesConnectionLossAndStillAcksEverything) {
  std::atomic<int> runs{0};
  Worker worker(Options());
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "net",
                      [&](TaskContext&) {
                        ++runs;
                        std::this_thread::sleep_for(50ms);
                        return Status::Ok();
                      },
                      FastRetry(4, 3000))  // the kills must not cost any lease
                  .ok());
  std::vector<std::string> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(Enqueue("net", {{"i", i}}));
  ASSERT_TRUE(worker.Start().ok());
  ASSERT_TRUE(WaitUntil([&] { return runs >= 4; }));
  for (int i = 0; i < 3; ++i) {
    // Drops every connection but the test's own: fetcher, heartbeat, maintenance.
    redis_.Command({"CLIENT", "KILL", "TYPE", "normal"});
    redis_.Command({"CLIENT", "KILL", "TYPE", "pubsub"});
    std::this_thread::sleep_for(150ms);
  }
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const std::string& id : ids) {
          if (!IsDone(id)) return false;
        }
        return true;
      },
      15s));
  EXPECT_EQ(Pending("net"), 0);
  EXPECT_EQ(StreamLength("net"), 0);
  EXPECT_EQ(runs, 40);  // nothing ran twice: no lease was lost, no ack was dropped
  worker.Stop();
}

}  // namespace
}  // namespace baton::testing
