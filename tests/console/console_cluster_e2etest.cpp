// baton-console on a real Redis Cluster (3 primaries), end to end over HTTP: `baton init` loads
// the library on every primary, a baton-collector (SQLite store) and a baton-console both get the
// redis+cluster:// URL, and one C++ worker serves three namespaces, one per primary. Some tasks
// succeed, some die. Through the console's HTTP API: the namespace list, the overview's counts,
// the live snapshot, the dead-task list, a task's timeline, a replay, a delete and a bulk delete
// of dead tasks whose namespaces are served by primaries other than the first seed of the URL,
// the diagnosis and worker pages, and a cron job disabled through the console.
#include <baton/client.h>
#include <baton/cron.h>
#include <baton/inspector.h>
#include <baton/worker.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "broker/keys.h"
#include "console_browser.h"
#include "harness/process.h"
#include "harness/redis_cluster.h"

namespace baton::console {
namespace {

using namespace std::chrono;
using baton::testing::Process;
using baton::testing::ReadFile;
using baton::testing::RedisCluster;
using baton::testing::TempDir;
using nlohmann::json;

constexpr const char* kType = "job";
constexpr int kDonePerNs = 5;
constexpr int kDeadPerNs = 2;

// The port of a process's HTTP server, read from the line it logs ("<marker><port>"); 0 when it
// did not start serving within 10 s.
int PortFromLog(Process& process, const std::string& log, const std::string& marker) {
  for (int i = 0; i < 500 && process.Running(); ++i) {
    const std::string text = ReadFile(log);
    if (auto at = text.find(marker); at != std::string::npos) {
      return std::atoi(text.c_str() + at + marker.size());
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  return 0;
}

// The index of the node whose port is the first seed of a redis+cluster:// URL.
int FirstSeed(RedisCluster& cluster) {
  const std::string url = cluster.url();
  const std::size_t colon = url.find(':', url.find("://") + 3);
  const int port = std::atoi(url.c_str() + colon + 1);
  for (int i = 0; i < cluster.size(); ++i) {
    if (cluster.node(i).port() == port) return i;
  }
  return -1;
}

// One namespace per primary, the first one on the first seed's primary.
std::vector<std::string> NamespacePerPrimary(RedisCluster& cluster, int first_seed) {
  std::map<int, std::string> by_primary;
  for (int i = 0; by_primary.size() < cluster.Primaries().size() && i < 1000; ++i) {
    const std::string ns = "tenant" + std::to_string(i);
    by_primary.emplace(cluster.PrimaryFor(internal::Keys(ns).Tasks()), ns);
  }
  std::vector<std::string> out;
  if (by_primary.count(first_seed) != 0) out.push_back(by_primary[first_seed]);
  for (const auto& [primary, ns] : by_primary) {
    if (primary != first_seed) out.push_back(ns);
  }
  return out;
}

// The entry of `ns` in a list of objects keyed by `field` (null when absent).
json Find(const json& list, const std::string& field, const std::string& ns) {
  if (!list.is_array()) return nullptr;
  for (const json& e : list) {
    if (e.value(field, "") == ns) return e;
  }
  return nullptr;
}

std::string TaskState(const std::string& url, const std::string& ns, const std::string& id) {
  InspectorOptions options;
  options.redis.url = url;
  auto inspector = Inspector::Connect(options);
  if (!inspector.ok()) return "";
  auto info = (*inspector)->GetTask(ns, id);
  return info.ok() ? std::string(TaskStateName(info->state)) : "";
}

TEST(ConsoleClusterE2eTest, TheConsoleReadsAndActsOnEveryShard) {
  RedisCluster cluster(3, 0);
  const std::string url = cluster.url();
  TempDir dir;
  const std::string init_log = dir.path() + "/init.log";
  Process init({BATON_CLI_PATH, "--redis", url, "init"}, init_log);
  ASSERT_EQ(init.Wait(seconds(30)), std::optional<int>(0)) << ReadFile(init_log);
  const int first_seed = FirstSeed(cluster);
  ASSERT_GE(first_seed, 0) << url;
  const std::vector<std::string> namespaces = NamespacePerPrimary(cluster, first_seed);
  ASSERT_EQ(namespaces.size(), 3u);
  ASSERT_EQ(cluster.PrimaryFor(internal::Keys(namespaces[0]).Tasks()), first_seed);

  // The collector and the console, on the cluster URL and one SQLite store.
  const std::string store = "sqlite://" + dir.path() + "/stats.db";
  const std::string collector_log = dir.path() + "/collector.log";
  Process collector(
      {BATON_COLLECTOR_PATH, "--redis", url, "--store", store, "--listen", "127.0.0.1:0", "--name",
       "c1", "--sample-interval-ms", "200", "--discovery-interval-ms", "200", "--block-ms", "100"},
      collector_log);
  ASSERT_GT(PortFromLog(collector, collector_log, "/metrics on http://127.0.0.1:"), 0)
      << ReadFile(collector_log);
  const std::string web = dir.path() + "/web";
  std::filesystem::create_directories(web);
  std::ofstream(web + "/index.html") << "<!doctype html><title>baton</title>";
  const std::string console_log = dir.path() + "/console.log";
  Process console(
      {BATON_CONSOLE_PATH, "--redis", url, "--store", store, "--users", UsersFile(dir.path()),
       "--web-dir", web, "--listen", "127.0.0.1:0", "--live-interval-ms", "200"},
      console_log);
  const int port = PortFromLog(console, console_log, "listening on http://127.0.0.1:");
  ASSERT_GT(port, 0) << ReadFile(console_log);

  // One worker process serves the three namespaces: a task with "fail" in its payload dies (no
  // retries), the others succeed.
  WorkerOptions wopts;
  wopts.redis.url = url;
  wopts.block = milliseconds(100);
  Worker worker(wopts);
  for (const std::string& ns : namespaces) {
    ASSERT_TRUE(worker
                    .Register(ns, kType,
                              [](TaskContext& task) {
                                if (json::parse(task.task().payload_json).value("fail", false)) {
                                  return Status::Internal("boom on a shard");
                                }
                                return Status::Ok();
                              })
                    .ok());
  }
  ASSERT_TRUE(worker.Start().ok());

  ClientOptions copts;
  copts.redis.url = url;
  auto client = Client::Connect(copts);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  std::map<std::string, std::vector<std::string>> done_ids, dead_ids;
  for (const std::string& ns : namespaces) {
    for (int i = 0; i < kDonePerNs + kDeadPerNs; ++i) {
      TaskRequest r;
      r.ns = ns;
      r.task_type = kType;
      r.payload = {{"i", i}, {"fail", i >= kDonePerNs}};
      r.options.max_retry = 0;
      auto queued = (*client)->Enqueue(r);
      ASSERT_TRUE(queued.ok()) << queued.status().ToString();
      (i >= kDonePerNs ? dead_ids : done_ids)[ns].push_back(queued->task_id);
    }
  }

  const auto enqueued_at = steady_clock::now();

  Browser op(port);
  ASSERT_EQ(op.Login("operator", "operator-pw")->status, 200);
  auto health = op.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200) << health->body;

  // Redis through the Inspector: every namespace, on every primary.
  json listed = Body(op.Get("/api/namespaces"));
  for (const std::string& ns : namespaces) {
    EXPECT_NE(std::find(listed["namespaces"].begin(), listed["namespaces"].end(), ns),
              listed["namespaces"].end())
        << ns << " missing from " << listed.dump();
  }

  // The store through the collector: today's counts and the newest queue sample of each
  // namespace, once the collector has caught up (the last answer is kept for the message).
  json overview;
  auto overview_right = [&] {
    overview = Body(op.Get("/api/overview"));
    for (const std::string& ns : namespaces) {
      const json n = Find(overview["namespaces"], "namespace", ns);
      if (n.is_null()) return false;
      const json& today = n["today"];
      if (today.value("enqueued", -1) != kDonePerNs + kDeadPerNs ||
          today.value("succeeded", -1) != kDonePerNs || today.value("dead", -1) != kDeadPerNs) {
        return false;
      }
      const json queue = n["types"].value(kType, json::object()).value("queue", json(nullptr));
      if (!queue.is_object() || queue.value("dead", -1) != kDeadPerNs ||
          queue.value("ready", -1) != 0) {
        return false;
      }
    }
    return true;
  };
  EXPECT_TRUE(WaitUntil(overview_right, seconds(30))) << overview.dump(1);
  std::printf("console on a cluster: the overview was right %lld ms after the enqueues\n",
              static_cast<long long>(
                  duration_cast<milliseconds>(steady_clock::now() - enqueued_at).count()));
  for (const std::string& ns : namespaces) {
    const json n = Find(overview["namespaces"], "namespace", ns);
    EXPECT_EQ(n.value("complete", false), true) << ns;
    std::printf("  %s on primary %d%s: today enqueued %s, succeeded %s, dead %s\n", ns.c_str(),
                cluster.PrimaryFor(internal::Keys(ns).Tasks()),
                ns == namespaces[0] ? " (the first seed)" : "",
                n["today"]["enqueued"].dump().c_str(), n["today"]["succeeded"].dump().c_str(),
                n["today"]["dead"].dump().c_str());
  }

  // The live snapshot (Inspector, every namespace's queues).
  json snapshot;
  EXPECT_TRUE(WaitUntil([&] {
    snapshot = Body(op.Get("/api/live/snapshot"));
    for (const std::string& ns : namespaces) {
      const json n = Find(snapshot["namespaces"], "ns", ns);
      if (n.is_null() || n["queues"].empty() || n["queues"][0].value("dead", -1) != kDeadPerNs) {
        return false;
      }
    }
    return true;
  })) << snapshot.dump(1);

  // The failed-tasks list has every dead task, with its namespace and error.
  json dead = Body(op.Get("/api/dead"));
  std::set<std::string> listed_dead;
  for (const json& t : dead["tasks"]) {
    listed_dead.insert(t.value("namespace", "") + "/" + t.value("task_id", ""));
    EXPECT_NE(t.value("error", "").find("boom on a shard"), std::string::npos) << t.dump();
  }
  std::set<std::string> expected_dead;
  for (const auto& [ns, ids] : dead_ids) {
    for (const std::string& id : ids) expected_dead.insert(ns + "/" + id);
  }
  EXPECT_EQ(listed_dead, expected_dead) << dead.dump(1);
  for (const std::string& ns : namespaces) {
    EXPECT_EQ(Body(op.Get("/api/dead?ns=" + ns))["tasks"].size(),
              static_cast<std::size_t>(kDeadPerNs))
        << ns;
  }

  // A task's page: its live state from its primary and its timeline from the store.
  for (const std::string& ns : namespaces) {
    for (const auto& [id, final_state] :
         {std::pair{done_ids[ns][0], "done"}, std::pair{dead_ids[ns][0], "dead"}}) {
      auto res = op.Get("/api/tasks/" + ns + "/" + id);
      ASSERT_TRUE(res);
      ASSERT_EQ(res->status, 200) << res->body;
      const json t = Body(res);
      EXPECT_EQ(t["live"]["state"], final_state) << t.dump(1);
      const json& timeline = t["timeline"];
      ASSERT_TRUE(timeline.is_object()) << t.dump(1);
      EXPECT_EQ(timeline["namespace"], ns);
      EXPECT_EQ(timeline["state"], final_state) << timeline.dump(1);
      EXPECT_EQ(timeline["complete"], true) << timeline.dump(1);
      std::vector<std::string> path;
      for (const json& e : timeline["events"]) path.push_back(e["to"]);
      ASSERT_GE(path.size(), 3u) << timeline.dump(1);
      EXPECT_EQ(timeline["events"][0]["from"], "new");
      EXPECT_EQ(path.back(), final_state);
      EXPECT_EQ(timeline["attempts"].size(), 1u) << timeline.dump(1);
      if (std::string(final_state) == "dead") {
        ASSERT_FALSE(t["live"]["errors"].empty()) << t.dump(1);
        EXPECT_EQ(t["live"]["errors"][0]["error"], "internal: boom on a shard");
      }
    }
  }

  // Actions on shards other than the first seed's: replay one dead task with a fixed payload (the
  // worker then runs it to done), delete another; a bulk preview counts the rest.
  const std::string& replay_ns = namespaces[1];
  const std::string& delete_ns = namespaces[2];
  const std::string replay_id = dead_ids[replay_ns][0];
  const std::string delete_id = dead_ids[delete_ns][0];
  auto replayed = op.Post("/api/dead/replay",
                          {{"ns", replay_ns}, {"id", replay_id}, {"payload", {{"fail", false}}}});
  ASSERT_TRUE(replayed);
  EXPECT_EQ(replayed->status, 200) << replayed->body;
  auto deleted = op.Post("/api/dead/delete", {{"ns", delete_ns}, {"id", delete_id}});
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->status, 200) << deleted->body;
  EXPECT_TRUE(WaitUntil([&] { return TaskState(url, replay_ns, replay_id) == "done"; }))
      << TaskState(url, replay_ns, replay_id);
  EXPECT_EQ(TaskState(url, delete_ns, delete_id), "deleted");
  EXPECT_EQ(TaskState(url, replay_ns, dead_ids[replay_ns][1]), "dead");  // only the one named
  EXPECT_EQ(Body(op.Post("/api/dead/preview", {{"ns", delete_ns}, {"type", kType}}))["matched"], 1);
  // The console shows both outcomes: the replayed task's timeline goes on to done, and the
  // deleted task leaves the failed-tasks list.
  json timeline;
  EXPECT_TRUE(WaitUntil([&] {
    timeline = Body(op.Get("/api/tasks/" + replay_ns + "/" + replay_id))["timeline"];
    return timeline.is_object() && timeline["state"] == "done";
  })) << timeline.dump(1);
  json remaining;
  EXPECT_TRUE(WaitUntil([&] {
    remaining = Body(op.Get("/api/dead"));
    return remaining["tasks"].size() == expected_dead.size() - 2;
  })) << remaining.dump(1);
  for (const json& t : remaining["tasks"]) {
    EXPECT_NE(t["task_id"], replay_id);
    EXPECT_NE(t["task_id"], delete_id);
  }

  // The other reads on a cluster: a queue's and a task's diagnosis (Inspector), the workers and
  // a type's per-minute series (store).
  for (const std::string& path :
       {"/api/doctor?ns=" + replay_ns + "&type=" + kType,
        "/api/doctor?ns=" + replay_ns + "&id=" + replay_id, std::string("/api/workers"),
        "/api/series?ns=" + delete_ns + "&type=" + kType}) {
    auto res = op.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path << " -> " << res->body;
  }
  EXPECT_FALSE(Body(op.Get("/api/workers"))["workers"].empty());

  // A bulk delete (admin) of a shard's remaining dead task, after its preview.
  Browser admin(port);
  ASSERT_EQ(admin.Login("admin", "admin-pw")->status, 200);
  auto bulk = admin.Post("/api/dead/bulk",
                         {{"action", "delete"}, {"ns", delete_ns}, {"type", kType}, {"expect", 1}});
  ASSERT_TRUE(bulk);
  EXPECT_EQ(bulk->status, 200) << bulk->body;
  EXPECT_EQ(Body(bulk)["succeeded"], 1) << bulk->body;
  EXPECT_EQ(TaskState(url, delete_ns, dead_ids[delete_ns][1]), "deleted");

  // Cron jobs live in global keys (no hash tag), on whichever primary serves their slot.
  CronClientOptions cron_options;
  cron_options.redis.url = url;
  auto cron = CronClient::Connect(cron_options);
  ASSERT_TRUE(cron.ok()) << cron.status().ToString();
  CronJobSpec job;
  job.name = "nightly";
  job.schedule = "0 3 * * *";
  job.ns = delete_ns;
  job.task_type = kType;
  ASSERT_TRUE((*cron)->Put(job).ok());
  json jobs = Body(op.Get("/api/cron"));
  ASSERT_EQ(jobs["jobs"].size(), 1u) << jobs.dump();
  EXPECT_EQ(jobs["jobs"][0]["name"], "nightly");
  auto disabled = op.Post("/api/cron/enable", {{"name", "nightly"}, {"enabled", false}});
  ASSERT_TRUE(disabled);
  EXPECT_EQ(disabled->status, 200) << disabled->body;
  auto stored = (*cron)->Get("nightly");
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_FALSE((*stored)->enabled);

  worker.Stop();
  console.Signal(SIGTERM);
  EXPECT_EQ(console.Wait(seconds(10)), std::optional<int>(0)) << ReadFile(console_log);
  collector.Signal(SIGTERM);
  EXPECT_EQ(collector.Wait(seconds(10)), std::optional<int>(0)) << ReadFile(collector_log);
}

}  // namespace
}  // namespace baton::console
