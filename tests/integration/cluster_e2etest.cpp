// Baton on a real Redis Cluster (3 primaries, 3 replicas), end to end: `baton init` loads the
// library on every primary; three namespaces, one per primary, are served by C++ worker processes
// and batond; a producer with wait_replicas = 1 keeps enqueueing while one primary is killed with
// kill -9. Every task whose enqueue succeeded must end done (a failover may lose what was not yet
// replicated, so an ack can be lost and a task run again: that is counted, not failed), and every
// delayed task must run after its due time.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "baton/client.h"
#include "broker/keys.h"
#include "broker/redis_connection.h"
#include "harness/process.h"
#include "harness/redis_cluster.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using internal::Keys;

constexpr const char* kType = "count";

struct Acked {
  std::string ns;
  std::string id;
  std::int64_t due_ms = 0;  // 0: immediate
};

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A namespace per primary: its keys' slot is served by that primary.
std::vector<std::string> NamespacePerPrimary(RedisCluster& cluster) {
  std::vector<std::string> out;
  std::set<int> covered;
  for (int i = 0; covered.size() < cluster.Primaries().size() && i < 1000; ++i) {
    const std::string ns = "shard" + std::to_string(i);
    if (covered.insert(cluster.PrimaryFor(Keys(ns).Tasks())).second) out.push_back(ns);
  }
  return out;
}

int RunCli(const std::vector<std::string>& args, const std::string& log, std::string* output) {
  std::vector<std::string> argv = {BATON_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  Process cli(argv, log);
  std::optional<int> status = cli.Wait(30s);
  *output = ReadFile(log);
  return status.value_or(-1);
}

TEST(ClusterE2eTest, EveryAcknowledgedTaskRunsThroughAPrimaryFailover) {
  RedisCluster cluster(3, 1);
  const std::string url = cluster.url();
  TempDir logs;
  std::string output;
  ASSERT_EQ(RunCli({"--redis", url, "init"}, logs.path() + "/init.log", &output), 0) << output;
  EXPECT_NE(output.find("loaded on 3 primaries"), std::string::npos) << output;

  const std::vector<std::string> namespaces = NamespacePerPrimary(cluster);
  ASSERT_EQ(namespaces.size(), 3u);
  Process batond({BATOND_PATH, "--redis-url", url, "--instance", "b1", "--log-level", "debug",
                  "--discovery-interval-ms", "500"},
                 logs.path() + "/batond.log");
  std::vector<std::unique_ptr<Process>> workers;
  for (const std::string& ns : namespaces) {
    workers.push_back(std::make_unique<Process>(
        std::vector<std::string>{BATON_COUNTING_WORKER, url, ns, kType, "4", "2000", "1"},
        logs.path() + "/worker-" + ns + ".log"));
  }

  ClientOptions options;
  options.redis.url = url;
  options.wait_replicas = 1;
  options.wait_timeout = 2000ms;
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  std::vector<Acked> acked;
  int refused = 0;
  auto produce = [&](int per_namespace, std::int64_t delay_s) {
    for (const std::string& ns : namespaces) {
      std::vector<TaskRequest> batch(static_cast<std::size_t>(per_namespace));
      for (TaskRequest& request : batch) {
        request.ns = ns;
        request.task_type = kType;
        request.options.delay_seconds = delay_s;
        // The handler's own HINCRBY fails while the cluster is down (CLUSTERDOWN everywhere for
        // the seconds of the failover, with the default cluster-require-full-coverage): enough
        // retries (50..500 ms apart) to outlast it.
        request.options.max_retry = 20;
      }
      const std::int64_t due = delay_s > 0 ? NowMs() + delay_s * 1000 : 0;
      auto results = (*client)->EnqueueMany(batch);
      if (!results.ok()) {
        ++refused;  // not acknowledged: may or may not exist, and is not counted
        continue;
      }
      for (const EnqueueResult& r : *results) acked.push_back({ns, r.task_id, due});
    }
  };
  produce(200, 0);
  produce(20, 2);

  // Kill only once every worker is serving (a task of each namespace done): a worker that starts
  // while a primary is down stops at once with "unavailable" (its start-up checks every primary),
  // which is not what this test is about. Under ASan the processes take a while to come up.
  {
    auto endpoint = internal::RedisEndpoint::Parse(url);
    ASSERT_TRUE(endpoint.ok());
    auto conn = internal::RedisConnection::Open(*endpoint);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    const auto serving_deadline = Clock::now() + 60s;
    std::size_t serving = 0;
    while (serving < namespaces.size() && Clock::now() < serving_deadline) {
      serving = 0;
      for (const std::string& ns : namespaces) {
        auto done = (*conn)->Command({"ZCARD", Keys(ns).Done()});
        if (done.ok() && done->integer > 0) ++serving;
      }
      if (serving < namespaces.size()) std::this_thread::sleep_for(50ms);
    }
    ASSERT_EQ(serving, namespaces.size()) << "the workers did not start serving in 60 s";
  }

  // Kill the primary of the second namespace while its tasks are being worked on.
  const int victim = cluster.PrimaryFor(Keys(namespaces[1]).Tasks());
  const auto kill_at = Clock::now();
  long long failover_ms = 0;
  std::thread failover([&] {
    cluster.KillAndWaitForFailover(victim);
    failover_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - kill_at).count();
  });
  // Keep producing through the failover: enqueues to the dead primary fail until a replica takes
  // over (not acknowledged, so not counted); the others go on.
  while (Clock::now() - kill_at < 6s) {
    produce(20, 0);
    std::this_thread::sleep_for(100ms);
  }
  failover.join();
  produce(100, 0);
  produce(10, 1);

  // Every acknowledged task ends done.
  auto endpoint = internal::RedisEndpoint::Parse(url);
  ASSERT_TRUE(endpoint.ok());
  auto probe = internal::RedisConnection::Open(*endpoint);
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  std::map<std::string, std::int64_t> finished_ms;
  const auto deadline = Clock::now() + 90s;
  while (Clock::now() < deadline && finished_ms.size() < acked.size()) {
    std::vector<const Acked*> asked;
    for (const Acked& task : acked) {
      if (finished_ms.count(task.id) != 0) continue;
      (*probe)->Append({"ZSCORE", Keys(task.ns).Done(), task.id});
      asked.push_back(&task);
    }
    auto replies = (*probe)->Flush();
    if (!replies.ok()) {
      (void)(*probe)->Reconnect();
      std::this_thread::sleep_for(200ms);
      continue;
    }
    for (std::size_t i = 0; i < asked.size(); ++i) {
      if (!(*replies)[i].is_nil() && !(*replies)[i].is_error()) {
        finished_ms[asked[i]->id] = std::stoll((*replies)[i].str);
      }
    }
    std::this_thread::sleep_for(200ms);
  }
  int missing = 0;
  int early = 0;
  std::map<std::string, int> missing_per_ns;
  for (const Acked& task : acked) {
    auto it = finished_ms.find(task.id);
    if (it == finished_ms.end()) {
      ++missing;
      if (++missing_per_ns[task.ns] <= 2) {
        auto record = (*probe)->Command({"HGET", Keys(task.ns).Tasks(), task.id});
        auto scheduled = (*probe)->Command({"ZSCORE", Keys(task.ns).Scheduled(kType), task.id});
        auto dead = (*probe)->Command({"ZSCORE", Keys(task.ns).Dead(kType), task.id});
        std::printf("not done: %s/%s due %lld record=%s scheduled=%s dead=%s\n", task.ns.c_str(),
                    task.id.c_str(), static_cast<long long>(task.due_ms),
                    record.ok() ? record->str.substr(0, 200).c_str() : "?",
                    scheduled.ok() ? scheduled->str.c_str() : "?",
                    dead.ok() ? dead->str.c_str() : "?");
      }
    } else if (task.due_ms > 0 && it->second + 50 < task.due_ms) {
      ++early;  // 50 ms: the producer's clock and the server's differ by the enqueue's trip
    }
  }
  auto runs = (*probe)->Command({"HLEN", "baton-test:runs"});
  std::printf(
      "cluster failover: %zu tasks acknowledged over 3 primaries, %d enqueue calls refused during "
      "the failover, failover took %lld ms, %d not done, %d delayed ran early, %lld distinct "
      "tasks counted by the workers\n",
      acked.size(), refused, failover_ms, missing, early, runs.ok() ? runs->integer : -1LL);
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(early, 0);
  if (missing > 0) {
    auto tail = [&](const std::string& name) {
      const std::string text = ReadFile(logs.path() + "/" + name);
      return text.substr(text.size() > 4000 ? text.size() - 4000 : 0);
    };
    for (const std::string& ns : namespaces) {
      std::printf("--- worker %s ---\n%s\n", ns.c_str(), tail("worker-" + ns + ".log").c_str());
    }
    std::printf("--- batond ---\n%s\n", tail("batond.log").c_str());
  }
  EXPECT_GT(acked.size(), 900u);

  // The promoted replica has the library (replicated): init --check passes everywhere.
  EXPECT_EQ(
      RunCli({"--redis", cluster.url(), "init", "--check"}, logs.path() + "/check.log", &output), 0)
      << output;
  for (auto& worker : workers) worker->Signal(SIGTERM);
  for (auto& worker : workers) EXPECT_EQ(worker->Wait(15s), std::optional<int>(0));
  batond.Signal(SIGTERM);
  EXPECT_EQ(batond.Wait(15s), std::optional<int>(0)) << ReadFile(logs.path() + "/batond.log");
}

}  // namespace
}  // namespace baton::testing
