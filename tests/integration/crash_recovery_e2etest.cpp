// Crash recovery end to end: 10,000 tasks (BATON_CRASH_N overrides), worker process A is killed
// with SIGKILL while it holds leased tasks, processes B and C finish the job. Every task must end
// done (at-least-once: none lost); tasks that ran twice are counted and printed. No batond: the
// survivors' own maintenance reclaims A's leases once they end (1 s after A's last heartbeat).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "baton/client.h"
#include "broker/keys.h"
#include "harness/process.h"
#include "harness/redis_server.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kNs = "crash";
constexpr const char* kType = "count";
constexpr const char* kLeaseMs = "1000";

long long PendingCount(RedisServer& redis) {
  auto r = redis.Command({"XPENDING", internal::Keys(kNs).Stream(kType), "baton"});
  return r->type == REDIS_REPLY_ARRAY && r->elements > 0 ? r->element[0]->integer : 0;
}

TEST(CrashRecoveryTest, KilledWorkersTasksAreFinishedByOthersAndNoneIsLost) {
  int n = 10000;
  if (const char* env = std::getenv("BATON_CRASH_N")) n = std::atoi(env);
  ASSERT_GT(n, 0);
  RedisServer redis;
  redis.LoadFunctions();
  ClientOptions copts;
  copts.redis.url = redis.url();
  auto client = Client::Connect(copts);
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  std::vector<std::string> ids;
  ids.reserve(static_cast<std::size_t>(n));
  for (int start = 0; start < n; start += 1000) {
    std::vector<TaskRequest> batch(static_cast<std::size_t>(std::min(1000, n - start)));
    for (std::size_t i = 0; i < batch.size(); ++i) {
      batch[i].ns = kNs;
      batch[i].task_type = kType;
      batch[i].payload = {{"i", start + static_cast<int>(i)}};
    }
    auto res = (*client)->EnqueueMany(batch);
    ASSERT_TRUE(res.ok()) << res.status().ToString();
    for (const auto& r : *res) ids.push_back(r.task_id);
  }

  TempDir logs;
  auto worker_argv = [&] {
    // 8 handler threads, 1 s lease, 2 ms of "work" per task so that A always holds leases.
    return std::vector<std::string>{
        BATON_COUNTING_WORKER, redis.url(), kNs, kType, "8", kLeaseMs, "2"};
  };
  auto t0 = Clock::now();
  Process a(worker_argv(), logs.path() + "/a.log");
  const auto& runs_key = "baton-test:runs";
  auto deadline = Clock::now() + 60s;
  while (Clock::now() < deadline &&
         !(redis.Integer({"HLEN", runs_key}) >= n / 5 && PendingCount(redis) > 0)) {
    std::this_thread::sleep_for(5ms);
  }
  long long in_flight = PendingCount(redis);
  long long ran_before_kill = redis.Integer({"HLEN", runs_key});
  a.Kill();
  ASSERT_GT(in_flight, 0) << "A never held leased tasks";
  ASSERT_LT(ran_before_kill, n) << "A finished everything before the kill";

  Process b(worker_argv(), logs.path() + "/b.log");
  Process c(worker_argv(), logs.path() + "/c.log");
  const internal::Keys keys(kNs);
  deadline = Clock::now() + 90s;
  while (Clock::now() < deadline && redis.Integer({"HLEN", keys.Tasks()}) > 0) {
    std::this_thread::sleep_for(20ms);
  }
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  EXPECT_EQ(redis.Integer({"HLEN", keys.Tasks()}), 0) << "tasks still live after 90 s";

  // Every task done, none lost, none dead.
  // Done: in the done set, with no other final state in `ended`.
  int missing_done = 0;
  for (const std::string& id : ids) {
    const bool finished = redis.Command({"ZSCORE", keys.Done(), id})->type != REDIS_REPLY_NIL;
    const bool ended = redis.Integer({"HEXISTS", keys.Ended(), id}) == 1;
    missing_done += finished && !ended ? 0 : 1;
  }
  auto all_runs = redis.Command({"HGETALL", runs_key});
  std::map<std::string, long long> runs;
  for (std::size_t i = 0; i + 1 < all_runs->elements; i += 2) {
    runs[all_runs->element[i]->str] = std::atoll(all_runs->element[i + 1]->str);
  }
  int never_ran = 0;
  int ran_twice = 0;
  int ran_more = 0;
  for (const std::string& id : ids) {
    auto it = runs.find(id);
    if (it == runs.end()) {
      ++never_ran;
    } else if (it->second == 2) {
      ++ran_twice;
    } else if (it->second > 2) {
      ++ran_more;
    }
  }
  std::printf(
      "crash recovery: %d tasks, A ran %lld and held %lld leases when killed; %d ran twice, %d "
      "more than twice, %d never ran, %d without a done marker; all done after %lld ms\n",
      n, ran_before_kill, in_flight, ran_twice, ran_more, never_ran, missing_done,
      static_cast<long long>(elapsed.count()));
  EXPECT_EQ(never_ran, 0);
  EXPECT_EQ(missing_done, 0);
  EXPECT_EQ(redis.Integer({"ZCARD", keys.Dead(kType)}), 0);
  EXPECT_EQ(redis.Integer({"XLEN", keys.Stream(kType)}), 0);
  EXPECT_EQ(PendingCount(redis), 0);  // no lease left
  // leases:TYPE holds no per-task entry: at most the lease length of each worker's consumer.
  EXPECT_LE(redis.Integer({"HLEN", keys.Leases(kType)}), 3);
  // Only the killed worker's leases can run twice.
  EXPECT_LE(ran_twice + ran_more, in_flight);

  // The survivors stop gracefully on SIGTERM.
  b.Signal(SIGTERM);
  c.Signal(SIGTERM);
  EXPECT_EQ(b.Wait(10s), std::optional<int>(0));
  EXPECT_EQ(c.Wait(10s), std::optional<int>(0));
}

}  // namespace
}  // namespace baton::testing
