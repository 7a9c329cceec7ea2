// Drain rate of Baton on a Redis Cluster, and Redis CPU per task on each primary.
//
//   bench_cluster_drain --redis redis+cluster://HOST:PORT[,...] [--tasks 100000]
//                       [--namespaces-per-primary 2] [--concurrency 16] [--payload 200]
//                       [--partitions P]
//
// Every primary gets the same number of namespaces (names chosen by the slot of their {ns} tag),
// so the load is spread evenly. With --partitions P there is one namespace instead, spread over
// P partitions (docs/cluster.md, "Partitions"), each on the primary its {drain:p} tag hashes to.
// The tasks are enqueued first (EnqueueMany, batches of 100, one producer thread per namespace),
// then one Worker process with a no-op handler per namespace drains them all. Printed: enqueue
// rate, drain rate (tasks / wall time from the worker's start to the last ack) and, per primary,
// Redis CPU (used_cpu_user + used_cpu_sys, INFO cpu) per task it served over both phases.
// bench/run_cluster.sh runs it on 1, 2 and 3 primaries.
#include <baton/client.h>
#include <baton/worker.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "broker/cluster_slot.h"
#include "broker/cluster_topology.h"
#include "broker/function_library.h"
#include "broker/keys.h"
#include "broker/partitions.h"
#include "broker/redis_connection.h"

namespace {

using Clock = std::chrono::steady_clock;
using baton::internal::RedisConnection;
using baton::internal::Reply;

struct Options {
  std::string redis;
  int tasks = 100000;
  int namespaces_per_primary = 2;
  int concurrency = 16;
  int payload = 200;
  int partitions = 0;  // > 0: one namespace of this many partitions
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "bench_cluster_drain: %s\n", what.c_str());
  std::exit(1);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Die("missing value for " + flag);
    const std::string value = argv[++i];
    if (flag == "--redis") {
      o.redis = value;
    } else if (flag == "--tasks") {
      o.tasks = std::atoi(value.c_str());
    } else if (flag == "--namespaces-per-primary") {
      o.namespaces_per_primary = std::atoi(value.c_str());
    } else if (flag == "--concurrency") {
      o.concurrency = std::atoi(value.c_str());
    } else if (flag == "--payload") {
      o.payload = std::atoi(value.c_str());
    } else if (flag == "--partitions") {
      o.partitions = std::atoi(value.c_str());
    } else {
      Die("unknown flag " + flag);
    }
  }
  if (o.redis.empty() || o.tasks <= 0 || o.namespaces_per_primary <= 0 || o.concurrency <= 0 ||
      o.partitions < 0 || o.partitions > baton::internal::kMaxPartitions) {
    Die("usage: --redis redis+cluster://... [--tasks N] [--namespaces-per-primary K] "
        "[--concurrency C] [--payload BYTES] [--partitions 1..1024]");
  }
  return o;
}

Reply MustOn(RedisConnection& conn, const std::string& node, const std::vector<std::string>& argv) {
  auto reply = conn.CommandOnNode(node, argv);
  if (!reply.ok()) Die(argv[0] + ": " + reply.status().ToString());
  if (reply->is_error()) Die(argv[0] + ": " + reply->str);
  return std::move(*reply);
}

double RedisCpuSeconds(RedisConnection& conn, const std::string& node) {
  const std::string info = MustOn(conn, node, {"INFO", "cpu"}).str;
  double total = 0;
  for (const char* field : {"used_cpu_user:", "used_cpu_sys:"}) {
    const std::size_t at = info.find(field);
    if (at == std::string::npos) Die(std::string("INFO cpu has no ") + field);
    total += std::atof(info.c_str() + at + std::string(field).size());
  }
  return total;
}

baton::internal::SlotMap ReadSlotMap(RedisConnection& conn) {
  const std::string first = conn.Nodes().at(0);
  auto asked = baton::internal::ParseNodeAddress(first);
  if (!asked.ok()) Die(asked.status().ToString());
  auto map = baton::internal::SlotMapFromShards(MustOn(conn, first, {"CLUSTER", "SHARDS"}), *asked);
  if (!map.ok()) Die(map.status().ToString());
  return std::move(*map);
}

// The storage namespaces of the partitions of `ns` by the primary that holds each.
std::map<std::string, std::vector<std::string>> PartitionLayout(RedisConnection& conn,
                                                                const std::string& ns, int count) {
  const baton::internal::SlotMap map = ReadSlotMap(conn);
  std::map<std::string, std::vector<std::string>> out;
  for (const std::string& node : conn.Nodes()) out[node];
  for (int p = 0; p < count; ++p) {
    const std::string storage = baton::internal::PartitionNamespace(ns, p);
    const auto* owner = map.Owner(baton::internal::KeySlot(storage));
    if (owner == nullptr) Die("slot of " + storage + " has no primary");
    out[owner->ToString()].push_back(storage);
  }
  return out;
}

// namespaces_per_primary names for each primary, by the slot of the names' {ns} tag.
std::map<std::string, std::vector<std::string>> SpreadNamespaces(RedisConnection& conn,
                                                                 const Options& o) {
  const baton::internal::SlotMap slot_map = ReadSlotMap(conn);
  const baton::internal::SlotMap* map = &slot_map;
  std::map<std::string, std::vector<std::string>> out;
  for (const std::string& node : conn.Nodes()) out[node];
  std::size_t full = 0;
  for (int i = 0; full < out.size(); ++i) {
    const std::string ns = "drain" + std::to_string(i);
    const auto* owner = map->Owner(baton::internal::KeySlot(ns));
    if (owner == nullptr) Die("slot of " + ns + " has no primary");
    auto& names = out[owner->ToString()];
    if (static_cast<int>(names.size()) < o.namespaces_per_primary) {
      names.push_back(ns);
      if (static_cast<int>(names.size()) == o.namespaces_per_primary) ++full;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  auto endpoint = baton::internal::RedisEndpoint::Parse(o.redis);
  if (!endpoint.ok()) Die(endpoint.status().ToString());
  auto opened = RedisConnection::Open(*endpoint);
  if (!opened.ok()) Die(opened.status().ToString());
  RedisConnection& admin = **opened;
  for (const std::string& node : admin.Nodes()) MustOn(admin, node, {"FLUSHALL"});
  if (auto st = baton::internal::LoadFunctionLibrary(admin); !st.ok()) Die(st.ToString());

  // `namespaces`: what producers enqueue to and the worker serves; `storage`: where the tasks are
  // (the same names, or the partitions of the one namespace), by primary.
  std::vector<std::string> namespaces;
  std::map<std::string, std::vector<std::string>> layout;
  int producers_count = 0;
  if (o.partitions > 0) {
    namespaces = {"drain"};
    baton::ClientOptions co;
    co.redis.url = o.redis;
    auto client = baton::Client::Connect(co);
    if (!client.ok()) Die(client.status().ToString());
    if (auto set = (*client)->SetPartitions("drain", o.partitions); !set.ok()) {
      Die(set.status().ToString());
    }
    layout = PartitionLayout(admin, "drain", o.partitions);
    producers_count = o.partitions;
  } else {
    layout = SpreadNamespaces(admin, o);
    for (const auto& [node, names] : layout)
      namespaces.insert(namespaces.end(), names.begin(), names.end());
    producers_count = static_cast<int>(namespaces.size());
  }
  std::vector<std::string> storage;
  for (const auto& [node, names] : layout)
    storage.insert(storage.end(), names.begin(), names.end());
  const int per_producer = o.tasks / producers_count;
  const int total = per_producer * producers_count;

  std::map<std::string, double> cpu0;
  for (const std::string& node : admin.Nodes()) cpu0[node] = RedisCpuSeconds(admin, node);

  // Enqueue: one producer thread per namespace (or per partition of the one namespace).
  const std::string payload =
      "{\"data\":\"" + std::string(static_cast<std::size_t>(o.payload), 'x') + "\"}";
  const auto enqueue_start = Clock::now();
  std::vector<std::thread> producers;
  for (int i = 0; i < producers_count; ++i) {
    const std::string ns = namespaces[static_cast<std::size_t>(i) % namespaces.size()];
    producers.emplace_back([&, ns] {
      baton::ClientOptions co;
      co.redis.url = o.redis;
      auto client = baton::Client::Connect(co);
      if (!client.ok()) Die(client.status().ToString());
      std::vector<baton::TaskRequest> batch(100);
      for (auto& request : batch) {
        request.ns = ns;
        request.task_type = "noop";
        request.payload_json = payload;
      }
      for (int sent = 0; sent < per_producer; sent += 100) {
        batch.resize(static_cast<std::size_t>(std::min(100, per_producer - sent)));
        auto r = (*client)->EnqueueMany(batch);
        if (!r.ok()) Die(r.status().ToString());
      }
    });
  }
  for (auto& t : producers) t.join();
  const double enqueue_s = std::chrono::duration<double>(Clock::now() - enqueue_start).count();

  // Drain: one worker, a no-op handler per namespace.
  std::atomic<int> handled{0};
  baton::WorkerOptions wo;
  wo.redis.url = o.redis;
  wo.default_concurrency = o.concurrency;
  wo.fetch_batch = 100;
  baton::Worker worker(wo);
  for (const std::string& ns : namespaces) {
    auto st = worker.Register(ns, "noop", [&](baton::TaskContext&) {
      handled.fetch_add(1, std::memory_order_relaxed);
      return baton::Status::Ok();
    });
    if (!st.ok()) Die(st.ToString());
  }
  const auto drain_start = Clock::now();
  if (auto st = worker.Start(); !st.ok()) Die(st.ToString());
  while (true) {
    long long left = 0;
    for (const std::string& ns : storage) admin.Append({"HLEN", baton::internal::Keys(ns).Tasks()});
    auto replies = admin.Flush();
    if (!replies.ok()) Die(replies.status().ToString());
    for (const Reply& r : *replies) left += r.integer;
    if (left == 0 && handled.load() >= total) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double drain_s = std::chrono::duration<double>(Clock::now() - drain_start).count();
  worker.Stop();

  std::printf(
      "primaries=%zu namespaces=%zu partitions=%d tasks=%d enqueue=%.0f tasks/s "
      "drain=%.0f tasks/s\n",
      layout.size(), namespaces.size(), std::max(1, o.partitions), total, total / enqueue_s,
      total / drain_s);
  for (const auto& [node, names] : layout) {
    // Partitions hold about total * (their share) tasks each; namespaces exactly per_producer.
    const double served = static_cast<double>(total) * static_cast<double>(names.size()) /
                          static_cast<double>(storage.size());
    std::printf("  primary %s: %zu %s, ~%.0f tasks, Redis CPU %.1f us/task (enqueue + drain)\n",
                node.c_str(), names.size(), o.partitions > 0 ? "partitions" : "namespaces", served,
                served > 0 ? (RedisCpuSeconds(admin, node) - cpu0[node]) * 1e6 / served : 0.0);
  }
  return 0;
}
