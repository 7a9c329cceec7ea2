// How late do delayed tasks run? Enqueues N tasks due across a few seconds, consumes them with a
// plain XREADGROUP loop (the moment a handler could start), and prints the lateness percentiles
// against each task's due time, plus the CPU time of the batond process that promoted them.
//
//   bench_delay_precision --redis redis://127.0.0.1:PORT [--tasks 10000] [--spread-ms 5000]
//                         [--lead-ms 2000] [--batond-pid PID] [--idle-s 10]
//
// Starts nothing itself: bench/run_delay_precision.sh starts redis-server and batond. Two figures:
//   promoted  = the stream entry's id time (Redis clock) - due time: batond's precision alone;
//   handler   = when the consumer received the entry (local clock) - due time: what a worker sees.
// The due time is the one baton_v2_enqueue returned (Redis clock); Redis runs on this host, so both
// clocks are the same.
#include <baton/client.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "broker/keys.h"
#include "broker/redis_connection.h"

namespace {

using namespace std::chrono;
using baton::internal::RedisConnection;
using baton::internal::RedisEndpoint;
using baton::internal::Reply;

struct Options {
  std::string redis = "redis://127.0.0.1:6379";
  int tasks = 10000;
  int spread_ms = 5000;
  int lead_ms = 2000;
  int batond_pid = 0;
  int idle_s = 10;
  std::string ns = "bench";
  std::string type = "delayed";
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "bench_delay_precision: %s\n", what.c_str());
  std::exit(1);
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--redis") {
      o.redis = value();
    } else if (a == "--tasks") {
      o.tasks = std::stoi(value());
    } else if (a == "--spread-ms") {
      o.spread_ms = std::stoi(value());
    } else if (a == "--lead-ms") {
      o.lead_ms = std::stoi(value());
    } else if (a == "--batond-pid") {
      o.batond_pid = std::stoi(value());
    } else if (a == "--idle-s") {
      o.idle_s = std::stoi(value());
    } else {
      Die("unknown argument " + a);
    }
  }
  if (o.tasks < 1 || o.spread_ms < 1 || o.lead_ms < 0) Die("bad --tasks/--spread-ms/--lead-ms");
  return o;
}

std::int64_t NowMs() {
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// utime + stime of a process, in milliseconds (fields 14 and 15 of /proc/PID/stat).
double CpuMs(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stoll(f);
    if (i == 15) stime = std::stoll(f);
  }
  return 1000.0 * static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

void PrintPercentiles(const char* what, std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    return static_cast<long long>(
        v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))]);
  };
  std::printf("%-9s lateness ms: min %lld  p50 %lld  p90 %lld  p99 %lld  max %lld\n", what,
              static_cast<long long>(v.front()), at(0.50), at(0.90), at(0.99),
              static_cast<long long>(v.back()));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = ParseArgs(argc, argv);
  auto endpoint = RedisEndpoint::Parse(o.redis);
  if (!endpoint.ok()) Die(endpoint.status().ToString());
  auto conn = RedisConnection::Open(*endpoint);
  if (!conn.ok()) Die(conn.status().ToString());
  RedisConnection& redis = **conn;
  const std::string stream = baton::internal::Keys(o.ns).Stream(o.type);

  // The consumer's group starts at the end of the (possibly new) stream.
  (void)redis.Command({"DEL", stream});  // best effort: XGROUP CREATE below reports a problem
  auto group = redis.Command({"XGROUP", "CREATE", stream, "bench", "$", "MKSTREAM"});
  if (!group.ok() || group->is_error()) Die("XGROUP CREATE failed");

  baton::ClientOptions co;
  co.redis.url = o.redis;
  auto client = baton::Client::Connect(co);
  if (!client.ok()) Die(client.status().ToString());

  // Due times spread evenly over the window, enqueued in random order (so that many enqueues
  // become the new earliest of the set and publish a wake-up, as in real traffic).
  const auto first_due = system_clock::now() + milliseconds(o.lead_ms);
  std::vector<int> order(o.tasks);
  for (int i = 0; i < o.tasks; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(42));
  std::unordered_map<std::string, std::int64_t> due;
  due.reserve(o.tasks);
  const double cpu_start = o.batond_pid > 0 ? CpuMs(o.batond_pid) : -1;
  const auto wall_start = steady_clock::now();
  std::vector<baton::TaskRequest> batch;
  for (int n = 0; n < o.tasks; ++n) {
    baton::TaskRequest req;
    req.ns = o.ns;
    req.task_type = o.type;
    req.payload = {{"n", order[n]}};
    req.options.run_at =
        first_due + microseconds(static_cast<long long>(order[n]) * o.spread_ms * 1000 / o.tasks);
    batch.push_back(std::move(req));
    if (batch.size() == 200 || n + 1 == o.tasks) {
      auto results = (*client)->EnqueueMany(batch);
      if (!results.ok()) Die(results.status().ToString());
      for (const auto& r : *results) due[r.task_id] = r.due_ms;
      batch.clear();
    }
  }
  const std::int64_t enqueue_done = NowMs();
  const std::int64_t first_due_ms =
      duration_cast<milliseconds>(first_due.time_since_epoch()).count();
  if (enqueue_done > first_due_ms) {
    std::fprintf(stderr,
                 "warning: enqueueing took longer than --lead-ms; early tasks were "
                 "already due when enqueued\n");
  }

  // Consume: one XREADGROUP at a time, stamping each entry on arrival.
  std::vector<std::int64_t> promoted;
  std::vector<std::int64_t> handler;
  promoted.reserve(o.tasks);
  handler.reserve(o.tasks);
  const auto deadline = steady_clock::now() + milliseconds(o.lead_ms + o.spread_ms + 30000);
  while (static_cast<int>(handler.size()) < o.tasks && steady_clock::now() < deadline) {
    auto reply = redis.BlockingCommand({"XREADGROUP", "GROUP", "bench", "c1", "COUNT", "1000",
                                        "BLOCK", "1000", "STREAMS", stream, ">"},
                                       milliseconds(3000));
    const std::int64_t arrived = NowMs();
    if (!reply.ok()) Die(reply.status().ToString());
    if (reply->is_nil() || !reply->is_array()) continue;
    for (const Reply& s : reply->elements) {
      for (const Reply& entry : s.elements[1].elements) {
        const std::string sid = entry.elements[0].AsString();
        const std::int64_t entry_ms = std::stoll(sid.substr(0, sid.find('-')));
        const Reply& kv = entry.elements[1];
        for (std::size_t i = 0; i + 1 < kv.elements.size(); i += 2) {
          // The entry's task field starts with the task id: "ID|MAX_RETRY|..." (docs/keyspace.md).
          if (kv.elements[i].AsString() != "task") continue;
          const std::string task = kv.elements[i + 1].AsString();
          auto it = due.find(task.substr(0, task.find('|')));
          if (it == due.end()) break;
          promoted.push_back(entry_ms - it->second);
          handler.push_back(arrived - it->second);
          break;
        }
      }
    }
  }
  const double busy_s = duration<double>(steady_clock::now() - wall_start).count();
  const double cpu_busy = o.batond_pid > 0 ? CpuMs(o.batond_pid) - cpu_start : -1;

  std::printf("tasks %d due across %d ms (first due %d ms after start), received %zu\n", o.tasks,
              o.spread_ms, o.lead_ms, handler.size());
  if (handler.empty()) Die("no task arrived: is batond running against this Redis?");
  PrintPercentiles("promoted", promoted);
  PrintPercentiles("handler", handler);
  std::int64_t early =
      std::count_if(promoted.begin(), promoted.end(), [](auto v) { return v < 0; });
  std::printf("promoted before due: %lld\n", static_cast<long long>(early));
  // The entries stay pending in the bench group (never acked, never leased: a plain XREADGROUP
  // records no lease, so no reclaim takes them back). Drop the group anyway, so that nothing of
  // the run is left for batond to look at while the idle figure is measured.
  (void)redis.Command({"XGROUP", "DESTROY", stream, "bench"});  // best effort, after the run
  if (o.batond_pid > 0) {
    std::printf("batond CPU during the run: %.0f ms over %.1f s (%.2f%% of one core)\n", cpu_busy,
                busy_s, 100.0 * cpu_busy / 1000.0 / busy_s);
    const double idle_start = CpuMs(o.batond_pid);
    std::this_thread::sleep_for(seconds(o.idle_s));
    const double idle = CpuMs(o.batond_pid) - idle_start;
    std::printf("batond CPU idle: %.0f ms over %d s (%.3f%% of one core)\n", idle, o.idle_s,
                100.0 * idle / 1000.0 / o.idle_s);
  }
  return static_cast<int>(handler.size()) == o.tasks ? 0 : 2;
}
