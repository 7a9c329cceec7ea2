// Leases belong to the worker that holds the task (protocol v2): the lease is what the worker
// asked for (TypeOptions::lease_ms, or the namespace's lease_ms), and no reaper, whatever its own
// settings, takes a task whose lease the worker keeps extending.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "broker/functions.h"
#include "broker/redis_connection.h"
#include "worker/worker_test_util.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;

// The v1 bug: the reaper took back every entry idle longer than ITS OWN lease setting, so a
// worker configured with a longer lease (a slow job) had its running tasks stolen and run again
// by a second worker, as soon as the task ran longer than the reaper's lease. In v2 a task is
// only reclaimed once the deadline its holder asked for has passed.
TEST_F(WorkerTest, ReaperWithShorterLeaseStoleRunningTaskOfLongLeaseWorker) {
  std::atomic<int> a_runs{0};
  std::atomic<bool> a_running{false};
  WorkerOptions oa = Options();
  oa.maintenance = false;
  Worker a(oa);
  ASSERT_TRUE(a.Register(
                   kNs, "slow",
                   [&](TaskContext& ctx) {
                     ++a_runs;
                     a_running = true;
                     std::this_thread::sleep_for(3s);
                     return ctx.cancelled() ? Status::Internal("lease lost") : Status::Ok();
                   },
                   FastRetry(1, 60000))
                  .ok());
  // Worker B serves the same type with the shortest lease and its own maintenance on (an
  // in-process reaper that reclaims every lease it sees ending), like a misconfigured batond.
  std::atomic<int> b_runs{0};
  Worker b(Options());
  ASSERT_TRUE(b.Register(
                   kNs, "slow",
                   [&](TaskContext&) {
                     ++b_runs;
                     return Status::Ok();
                   },
                   FastRetry(1, 1000))
                  .ok());
  ASSERT_TRUE(a.Start().ok());
  std::string id = Enqueue("slow", {});
  ASSERT_TRUE(WaitUntil([&] { return a_running.load(); }));
  ASSERT_TRUE(b.Start().ok());

  // A third reaper: reclaim called every 20 ms for the whole run, far more often than anyone's
  // reclaim interval, and long past every lease but A's own.
  auto endpoint = internal::RedisEndpoint::Parse(redis_.url());
  ASSERT_TRUE(endpoint.ok());
  auto conn = internal::RedisConnection::Open(*endpoint);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  int calls = 0;
  long long reclaimed = 0;
  long long min_lease_left = 1LL << 62;
  while (!IsDone(id) && calls < 1000) {
    auto reply = (*conn)->Command(
        internal::fn::Reclaim(kNs, "slow", 100, 50, 200, static_cast<std::uint64_t>(calls), "r3"));
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    ASSERT_TRUE(reply->is_array()) << reply->str;
    ASSERT_EQ(reply->elements.size(), 5u);
    reclaimed += reply->elements[0].AsInteger();
    ++calls;
    long long deadline = LeaseDeadline("slow", id);
    if (deadline >= 0) min_lease_left = std::min(min_lease_left, deadline - RedisNowMs());
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(WaitUntil([&] { return IsDone(id); }));
  EXPECT_GT(calls, 50);
  EXPECT_EQ(reclaimed, 0);
  // The lease is the 60 s A asked for: it never got close to ending.
  EXPECT_GT(min_lease_left, 50000);
  EXPECT_EQ(a_runs, 1);
  EXPECT_EQ(b_runs, 0);
  std::optional<Finish> finish = DoneBy(id);
  ASSERT_TRUE(finish.has_value());
  EXPECT_EQ(finish->attempts, 1);
  EXPECT_EQ(finish->worker, a.consumer_name());
  EXPECT_EQ(a.stats().succeeded, 1u);
  EXPECT_EQ(a.stats().failed, 0u);
  a.Stop();
  b.Stop();
}

TEST_F(WorkerTest, LeaseMsZeroIsTheNamespacesSettingAndHeartbeatsFollowIt) {
  // The namespace's lease is 1.5 s; a worker that assumed the 30 s default would heartbeat every
  // 10 s, the lease would end and the maintenance would take the task back (attempt 2).
  auto set = redis_.Command(internal::fn::Configure(
      kNs, std::vector<std::pair<std::string, std::string>>{{"lease_ms", "1500"}}));
  ASSERT_EQ(set->type, REDIS_REPLY_ARRAY);
  std::atomic<int> runs{0};
  std::atomic<bool> running{false};
  Worker worker(Options());
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "ns-lease",
                      [&](TaskContext& ctx) {
                        ++runs;
                        running = true;
                        std::this_thread::sleep_for(3s);
                        return ctx.cancelled() ? Status::Internal("lease lost") : Status::Ok();
                      },
                      FastRetry(1))
                  .ok());
  ASSERT_TRUE(worker.Start().ok());
  std::string id = Enqueue("ns-lease", {});
  ASSERT_TRUE(WaitUntil([&] { return running.load(); }));
  long long max_left = 0;
  long long min_left = 1LL << 62;
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!IsDone(id) && std::chrono::steady_clock::now() < until) {
    long long deadline = LeaseDeadline("ns-lease", id);
    if (deadline >= 0) {
      long long left = deadline - RedisNowMs();
      max_left = std::max(max_left, left);
      min_left = std::min(min_left, left);
    }
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(IsDone(id));
  EXPECT_LE(max_left, 1500);  // the namespace's lease, not the default
  EXPECT_GT(min_left, 0);     // extended every 500 ms: never ended
  EXPECT_EQ(runs, 1);
  ASSERT_TRUE(DoneBy(id).has_value());
  EXPECT_EQ(DoneBy(id)->attempts, 1);
  worker.Stop();
}

TEST_F(WorkerTest, RegisterRefusesALeaseOutsideTheFunctionsRange) {
  Worker worker(Options());
  auto ok = [](TaskContext&) { return Status::Ok(); };
  EXPECT_EQ(worker.Register(kNs, "t", ok, FastRetry(0, 999)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(worker.Register(kNs, "t", ok, FastRetry(0, -1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(worker.Register(kNs, "t", ok, FastRetry(0, 86400001)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(worker.Register(kNs, "t", ok, FastRetry(0, 1000)).ok());
  EXPECT_TRUE(worker.Register(kNs, "u", ok, FastRetry(0, 0)).ok());
}

}  // namespace
}  // namespace baton::testing
