// Crash recovery end to end: 10,000 tasks (BATON_CRASH_N overrides), worker process A is killed
// with SIGKILL while it holds leased tasks, processes B and C finish the job. Every task must end
// done (at-least-once: none lost); tasks that ran twice are counted and printed. No batond: the
// survivors' own maintenance reclaims A's leases once they end (1 s after A's last heartbeat).
// It runs twice: on a single redis-server (one namespace), and on a Redis Cluster of 3 primaries
// with a replica each, made by the harness, with one namespace per primary, so that recovery
// happens on every shard. A counting_worker serves one namespace, so on the cluster each of A, B
// and C is one process per namespace, and "killing A" SIGKILLs all three of A's processes.
// Everything read from Redis goes through the cluster-aware internal::RedisConnection.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "baton/client.h"
#include "broker/keys.h"
#include "broker/redis_connection.h"
#include "harness/process.h"
#include "harness/redis_cluster.h"
#include "harness/redis_server.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using internal::Keys;
using internal::RedisConnection;
using internal::Reply;

constexpr const char* kType = "count";
constexpr const char* kLeaseMs = "1000";
constexpr const char* kRunsKey = "baton-test:runs";  // counting_worker's HINCRBY per run

enum class Backend { kSingleRedis, kCluster };

// The Redis of one run: a single redis-server with the library loaded, or a 3-primary cluster on
// which `baton init` loaded it; and the namespaces the tasks are spread over.
struct Deployment {
  std::unique_ptr<RedisServer> server;
  std::unique_ptr<RedisCluster> cluster;
  std::string url;
  std::vector<std::string> namespaces;
};

// "crashI" names, one per primary: its keys' slot is served by that primary.
std::vector<std::string> NamespacePerPrimary(RedisCluster& cluster) {
  std::vector<std::string> out;
  std::set<int> covered;
  for (int i = 0; covered.size() < cluster.Primaries().size() && i < 1000; ++i) {
    const std::string ns = "crash" + std::to_string(i);
    if (covered.insert(cluster.PrimaryFor(Keys(ns).Tasks())).second) out.push_back(ns);
  }
  return out;
}

Deployment Deploy(Backend backend, const std::string& log_dir) {
  Deployment d;
  if (backend == Backend::kSingleRedis) {
    d.server = std::make_unique<RedisServer>();
    d.server->LoadFunctions();
    d.url = d.server->url();
    d.namespaces = {"crash"};
    return d;
  }
  d.cluster = std::make_unique<RedisCluster>(3, 1);
  d.url = d.cluster->url();
  const std::string log = log_dir + "/init.log";
  Process init({BATON_CLI_PATH, "--redis", d.url, "init"}, log);
  EXPECT_EQ(init.Wait(30s), std::optional<int>(0)) << ReadFile(log);
  EXPECT_NE(ReadFile(log).find("loaded on 3 primaries"), std::string::npos) << ReadFile(log);
  d.namespaces = NamespacePerPrimary(*d.cluster);
  EXPECT_EQ(d.namespaces.size(), 3u);
  return d;
}

// Runs `argv` through the connection; a transport failure or an error reply fails the test.
Reply Checked(RedisConnection& conn, const std::vector<std::string>& argv) {
  auto reply = conn.Command(argv);
  EXPECT_TRUE(reply.ok()) << argv[0] << ": " << reply.status().ToString();
  if (!reply.ok()) return Reply{};
  EXPECT_FALSE(reply->is_error()) << argv[0] << ": " << reply->str;
  return *reply;
}

long long Integer(RedisConnection& conn, const std::vector<std::string>& argv) {
  return Checked(conn, argv).integer;
}

// Entries delivered to the workers' group and not acknowledged: the leases held.
long long PendingCount(RedisConnection& conn, const std::string& ns) {
  Reply r = Checked(conn, {"XPENDING", Keys(ns).Stream(kType), "baton"});
  return r.is_array() && !r.elements.empty() ? r.elements[0].integer : 0;
}

class CrashRecoveryTest : public ::testing::TestWithParam<Backend> {};

TEST_P(CrashRecoveryTest, KilledWorkersTasksAreFinishedByOthersAndNoneIsLost) {
  int n = 10000;
  if (const char* env = std::getenv("BATON_CRASH_N")) n = std::atoi(env);
  ASSERT_GT(n, 0);
  TempDir logs;
  const auto setup_at = Clock::now();
  Deployment d = Deploy(GetParam(), logs.path());
  ASSERT_FALSE(::testing::Test::HasFailure()) << "deployment failed";
  const auto setup_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - setup_at).count();
  const std::vector<std::string>& namespaces = d.namespaces;
  auto endpoint = internal::RedisEndpoint::Parse(d.url);
  ASSERT_TRUE(endpoint.ok()) << endpoint.status().ToString();
  auto opened = RedisConnection::Open(*endpoint);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  RedisConnection& probe = **opened;

  ClientOptions copts;
  copts.redis.url = d.url;
  auto client = Client::Connect(copts);
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  // Task i goes to namespace i % namespaces.size(), in batches of up to 1000 per namespace.
  std::map<std::string, std::string> ns_of;  // task id -> namespace
  std::vector<std::string> ids;
  ids.reserve(static_cast<std::size_t>(n));
  for (int start = 0; start < n; start += 1000) {
    const int end = std::min(n, start + 1000);
    for (std::size_t k = 0; k < namespaces.size(); ++k) {
      std::vector<TaskRequest> batch;
      for (int i = start; i < end; ++i) {
        if (static_cast<std::size_t>(i) % namespaces.size() != k) continue;
        TaskRequest& r = batch.emplace_back();
        r.ns = namespaces[k];
        r.task_type = kType;
        r.payload = {{"i", i}};
      }
      if (batch.empty()) continue;
      auto res = (*client)->EnqueueMany(batch);
      ASSERT_TRUE(res.ok()) << res.status().ToString();
      for (const auto& r : *res) {
        ids.push_back(r.task_id);
        ns_of[r.task_id] = namespaces[k];
      }
    }
  }
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(n));

  // Each role (A, B, C) is one process per namespace: 8 handler threads, 1 s lease, 2 ms of
  // "work" per task so that A always holds leases.
  auto start_role = [&](const std::string& role) {
    std::vector<std::unique_ptr<Process>> processes;
    for (const std::string& ns : namespaces) {
      processes.push_back(std::make_unique<Process>(
          std::vector<std::string>{BATON_COUNTING_WORKER, d.url, ns, kType, "8", kLeaseMs, "2"},
          logs.path() + "/" + role + "-" + ns + ".log"));
    }
    return processes;
  };
  auto t0 = Clock::now();
  auto a = start_role("a");
  auto every_ns_leased = [&] {
    for (const std::string& ns : namespaces) {
      if (PendingCount(probe, ns) == 0) return false;
    }
    return true;
  };
  auto deadline = Clock::now() + 60s;
  while (Clock::now() < deadline &&
         !(Integer(probe, {"HLEN", kRunsKey}) >= n / 5 && every_ns_leased())) {
    std::this_thread::sleep_for(5ms);
  }
  for (auto& p : a) p->Kill();
  // A is dead and nobody else has started: the group's pending entries are exactly A's leases.
  std::map<std::string, long long> in_flight;
  long long in_flight_total = 0;
  for (const std::string& ns : namespaces) {
    in_flight[ns] = PendingCount(probe, ns);
    in_flight_total += in_flight[ns];
    EXPECT_GT(in_flight[ns], 0) << "A never held leased tasks of " << ns;
  }
  const long long ran_before_kill = Integer(probe, {"HLEN", kRunsKey});
  ASSERT_LT(ran_before_kill, n) << "A finished everything before the kill";
  ASSERT_FALSE(::testing::Test::HasFailure());

  auto b = start_role("b");
  auto c = start_role("c");
  auto live_tasks = [&] {
    long long live = 0;
    for (const std::string& ns : namespaces) live += Integer(probe, {"HLEN", Keys(ns).Tasks()});
    return live;
  };
  deadline = Clock::now() + 90s;
  while (Clock::now() < deadline && live_tasks() > 0) std::this_thread::sleep_for(20ms);
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  EXPECT_EQ(live_tasks(), 0) << "tasks still live after 90 s";

  // Every task done, none lost, none dead.
  // Done: in the done set, with no other final state in `ended`. One pipeline (split by node).
  for (const std::string& id : ids) {
    const Keys keys(ns_of[id]);
    probe.Append({"ZSCORE", keys.Done(), id});
    probe.Append({"HEXISTS", keys.Ended(), id});
  }
  auto replies = probe.Flush();
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  ASSERT_EQ(replies->size(), 2 * ids.size());
  int missing_done = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const Reply& done = (*replies)[2 * i];
    const Reply& ended = (*replies)[2 * i + 1];
    const bool finished = !done.is_nil() && !done.is_error();
    missing_done += finished && !ended.is_error() && ended.integer == 0 ? 0 : 1;
  }
  Reply all_runs = Checked(probe, {"HGETALL", kRunsKey});
  std::map<std::string, long long> runs;
  for (std::size_t i = 0; i + 1 < all_runs.elements.size(); i += 2) {
    runs[all_runs.elements[i].str] = all_runs.elements[i + 1].AsInteger();
  }
  int never_ran = 0;
  int ran_twice = 0;
  int ran_more = 0;
  std::map<std::string, int> again_per_ns;  // tasks that ran more than once, per namespace
  for (const std::string& id : ids) {
    auto it = runs.find(id);
    if (it == runs.end()) {
      ++never_ran;
      continue;
    }
    if (it->second == 2) ++ran_twice;
    if (it->second > 2) ++ran_more;
    if (it->second >= 2) ++again_per_ns[ns_of[id]];
  }
  std::printf(
      "crash recovery (%s, %zu namespace(s), set up in %lld ms): %d tasks, A ran %lld and held "
      "%lld leases when killed; %d ran twice, %d more than twice, %d never ran, %d without a done "
      "marker; all done after %lld ms\n",
      GetParam() == Backend::kCluster ? "cluster" : "single redis", namespaces.size(),
      static_cast<long long>(setup_ms), n, ran_before_kill, in_flight_total, ran_twice, ran_more,
      never_ran, missing_done, static_cast<long long>(elapsed.count()));
  EXPECT_EQ(never_ran, 0);
  EXPECT_EQ(missing_done, 0);
  for (const std::string& ns : namespaces) {
    const Keys keys(ns);
    if (d.cluster) {
      std::printf("  %s on primary %d: A held %lld leases, %d tasks ran more than once\n",
                  ns.c_str(), d.cluster->PrimaryFor(keys.Tasks()), in_flight[ns], again_per_ns[ns]);
    }
    EXPECT_EQ(Integer(probe, {"ZCARD", keys.Dead(kType)}), 0) << ns;
    EXPECT_EQ(Integer(probe, {"XLEN", keys.Stream(kType)}), 0) << ns;
    EXPECT_EQ(PendingCount(probe, ns), 0) << ns;  // no lease left
    // leases:TYPE holds no per-task entry: at most the lease length of each worker's consumer.
    EXPECT_LE(Integer(probe, {"HLEN", keys.Leases(kType)}), 3) << ns;
    // Only the killed worker's leases of this namespace can run twice.
    EXPECT_LE(again_per_ns[ns], in_flight[ns]) << ns;
  }

  // The survivors stop gracefully on SIGTERM.
  for (auto* role : {&b, &c}) {
    for (auto& p : *role) p->Signal(SIGTERM);
  }
  for (auto* role : {&b, &c}) {
    for (auto& p : *role) EXPECT_EQ(p->Wait(10s), std::optional<int>(0));
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, CrashRecoveryTest,
                         ::testing::Values(Backend::kSingleRedis, Backend::kCluster),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return info.param == Backend::kCluster ? "Cluster3Primaries"
                                                                  : "SingleRedis";
                         });

}  // namespace
}  // namespace baton::testing
