// End-to-end throughput and latency of Baton against the bare Redis Streams pattern, on one Redis.
//
//   bench_throughput --redis redis://127.0.0.1:PORT [--tasks 200000] [--payload 200]
//                    [--concurrency 64] [--latency-tasks 2000] [--commandstats]
//
// Phases (each on a flushed database):
//   1. bare streams: XADD (pipelined by 100) -> XREADGROUP COUNT 100 -> XACK+XDEL (pipelined),
//      producer and consumer running at once, same client library (hiredis) as Baton.
//   2. baton: Client::EnqueueMany (batches of 100) -> Worker with a no-op handler -> batched ack,
//      namespace settings at their defaults (events on).
//   3. memory: N tasks enqueued with no worker; used_memory delta per queued task, with the
//      namespace's events off (events_maxlen 0) and on (the default cap; one events entry per
//      enqueue call, so events add little per task).
//   4. light load: 200 tasks/s one at a time; enqueue-to-handler-start latency p50/p99; then the
//      same load on the bare pattern (XADD -> XREADGROUP BLOCK), the floor under that figure.
// Redis CPU per task is the delta of used_cpu_user+used_cpu_sys over the phase / tasks; client CPU
// per task the same for this process (producer, worker, bench threads: getrusage), and switches
// per task its context switches (voluntary + involuntary: mostly threads handing work over).
#include <baton/client.h>
#include <baton/worker.h>
#include <hiredis/hiredis.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "broker/function_library.h"
#include "broker/keys.h"
#include "broker/redis_connection.h"

namespace {

using Clock = std::chrono::steady_clock;
using baton::internal::RedisConnection;
using baton::internal::RedisEndpoint;
using baton::internal::Reply;

struct Options {
  std::string redis = "redis://127.0.0.1:6379";
  int tasks = 200000;
  int payload = 200;
  int concurrency = 64;  // handler threads of the no-op type
  int latency_tasks = 2000;
  bool commandstats = false;  // print the drain's commands per task (INFO commandstats)
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "bench_throughput: %s\n", what.c_str());
  std::exit(1);
}

std::unique_ptr<RedisConnection> Connect(const Options& o) {
  auto ep = RedisEndpoint::Parse(o.redis);
  if (!ep.ok()) Die(ep.status().ToString());
  auto c = RedisConnection::Open(*ep);
  if (!c.ok()) Die(c.status().ToString());
  return std::move(*c);
}

Reply Must(RedisConnection& c, const std::vector<std::string>& argv) {
  auto r = c.Command(argv);
  if (!r.ok()) Die(r.status().ToString());
  if (r->is_error()) Die(argv[0] + ": " + r->str);
  return std::move(*r);
}

// A field of INFO.
double InfoField(RedisConnection& c, const std::string& section, const std::string& field) {
  std::string info = Must(c, {"INFO", section}).str;
  auto pos = info.find(field + ":");
  if (pos == std::string::npos) Die("INFO has no " + field);
  return std::strtod(info.c_str() + pos + field.size() + 1, nullptr);
}

double RedisCpuSeconds(RedisConnection& c) {
  return InfoField(c, "cpu", "used_cpu_user") + InfoField(c, "cpu", "used_cpu_sys");
}

// CPU time of this process (producer, worker and bench threads), user + system.
double ClientCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

// Context switches of this process so far (voluntary + involuntary): a thread that waits for
// another costs one.
double ClientSwitches() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_nvcsw + u.ru_nivcsw);
}

std::string PayloadJson(int bytes) {
  // {"data":"xxx..."} of exactly `bytes` bytes.
  int filler = std::max(0, bytes - 11);
  return "{\"data\":\"" + std::string(filler, 'x') + "\"}";
}

void Reset(RedisConnection& c) {
  Must(c, {"FLUSHALL"});
  auto st = baton::internal::LoadFunctionLibrary(c);
  if (!st.ok()) Die(st.ToString());
}

struct PhaseResult {
  double seconds = 0;
  double cpu_us_per_task = 0;
  double client_cpu_us_per_task = 0;
  double client_switches_per_task = 0;  // context switches of this process (thread hand-offs)
};

// Prints every command's calls and Redis time per task since the last CONFIG RESETSTAT (commands
// the functions run inside Redis included), busiest first.
void PrintCommandStats(RedisConnection& c, int tasks) {
  std::string info = Must(c, {"INFO", "commandstats"}).str;
  struct Row {
    std::string name;
    double calls, usec;
  };
  std::vector<Row> rows;
  for (std::size_t pos = 0; (pos = info.find("cmdstat_", pos)) != std::string::npos;) {
    auto colon = info.find(':', pos);
    auto calls = info.find("calls=", colon);
    auto usec = info.find("usec=", calls);
    rows.push_back({info.substr(pos + 8, colon - pos - 8), std::strtod(&info[calls + 6], nullptr),
                    std::strtod(&info[usec + 5], nullptr)});
    pos = colon;
  }
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.usec > b.usec; });
  for (const Row& r : rows) {
    std::printf("  %-22s %8.4f calls/task  %6.2f us/task\n", r.name.c_str(), r.calls / tasks,
                r.usec / tasks);
  }
}

PhaseResult BareStreams(const Options& o) {
  auto admin = Connect(o);
  Reset(*admin);
  const std::string stream = "bench:bare";
  Must(*admin, {"XGROUP", "CREATE", stream, "g", "0", "MKSTREAM"});
  const std::string payload = PayloadJson(o.payload);
  double cpu0 = RedisCpuSeconds(*admin);
  double client0 = ClientCpuSeconds();
  double switches0 = ClientSwitches();
  auto start = Clock::now();
  std::thread producer([&] {
    auto c = Connect(o);
    for (int sent = 0; sent < o.tasks;) {
      int n = std::min(100, o.tasks - sent);
      for (int i = 0; i < n; ++i) c->Append({"XADD", stream, "*", "payload", payload});
      if (!c->Flush().ok()) Die("bare producer flush");
      sent += n;
    }
  });
  auto c = Connect(o);
  int done = 0;
  while (done < o.tasks) {
    auto r = c->BlockingCommand(
        {"XREADGROUP", "GROUP", "g", "c", "COUNT", "100", "BLOCK", "1000", "STREAMS", stream, ">"},
        std::chrono::milliseconds(3000));
    if (!r.ok()) Die(r.status().ToString());
    if (r->is_nil()) continue;
    std::vector<std::string> ack = {"XACK", stream, "g"};
    std::vector<std::string> del = {"XDEL", stream};
    for (auto& e : r->elements[0].elements[1].elements) {
      ack.push_back(e.elements[0].str);
      del.push_back(e.elements[0].str);
    }
    c->Append(ack);
    c->Append(del);
    if (!c->Flush().ok()) Die("bare ack flush");
    done += static_cast<int>(ack.size() - 3);
  }
  producer.join();
  PhaseResult res;
  res.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  res.cpu_us_per_task = (RedisCpuSeconds(*admin) - cpu0) * 1e6 / o.tasks;
  res.client_cpu_us_per_task = (ClientCpuSeconds() - client0) * 1e6 / o.tasks;
  res.client_switches_per_task = (ClientSwitches() - switches0) / o.tasks;
  return res;
}

std::vector<baton::TaskRequest> Requests(int n, const std::string& payload_json) {
  std::vector<baton::TaskRequest> v(n);
  auto payload = nlohmann::json::parse(payload_json);
  for (auto& r : v) {
    r.ns = "bench";
    r.task_type = "noop";
    r.payload = payload;
  }
  return v;
}

PhaseResult BatonDrain(const Options& o) {
  auto admin = Connect(o);
  Reset(*admin);
  std::atomic<int> handled{0};
  baton::WorkerOptions wo;
  wo.redis.url = o.redis;
  wo.default_concurrency = o.concurrency;
  wo.fetch_batch = 100;
  baton::Worker worker(wo);
  baton::Status registered = worker.Register("bench", "noop", [&](baton::TaskContext&) {
    handled.fetch_add(1, std::memory_order_relaxed);
    return baton::Status::Ok();
  });
  if (!registered.ok()) Die(registered.ToString());
  if (auto st = worker.Start(); !st.ok()) Die(st.ToString());
  const std::string payload = PayloadJson(o.payload);
  if (o.commandstats) Must(*admin, {"CONFIG", "RESETSTAT"});
  double cpu0 = RedisCpuSeconds(*admin);
  double client0 = ClientCpuSeconds();
  double switches0 = ClientSwitches();
  auto start = Clock::now();
  std::thread producer([&] {
    baton::ClientOptions co;
    co.redis.url = o.redis;
    auto client = baton::Client::Connect(co);
    if (!client.ok()) Die(client.status().ToString());
    auto batch = Requests(100, payload);
    for (int sent = 0; sent < o.tasks; sent += 100) {
      auto r = (*client)->EnqueueMany(batch);
      if (!r.ok()) Die(r.status().ToString());
    }
  });
  producer.join();
  // Drained = every task acked: no record left in the index and nothing pending.
  while (true) {
    auto left = Must(*admin, {"HLEN", baton::internal::Keys("bench").Tasks()}).integer;
    if (left == 0 && handled.load() >= o.tasks) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  PhaseResult res;
  res.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  res.cpu_us_per_task = (RedisCpuSeconds(*admin) - cpu0) * 1e6 / o.tasks;
  res.client_cpu_us_per_task = (ClientCpuSeconds() - client0) * 1e6 / o.tasks;
  res.client_switches_per_task = (ClientSwitches() - switches0) / o.tasks;
  if (o.commandstats) {
    std::printf("baton drain, per task (inner commands of the functions included):\n");
    PrintCommandStats(*admin, o.tasks);
  }
  worker.Stop();
  return res;
}

// Bytes of Redis memory per queued task, events off (events_maxlen 0) and on (default cap).
std::pair<double, double> MemoryPerTask(const Options& o) {
  std::pair<double, double> out;
  for (int with_events = 0; with_events < 2; ++with_events) {
    auto admin = Connect(o);
    Reset(*admin);
    baton::ClientOptions co;
    co.redis.url = o.redis;
    auto client = baton::Client::Connect(co);
    if (!client.ok()) Die(client.status().ToString());
    // Events are a namespace setting: 0 = none, "" = back to the default cap.
    auto settings =
        (*client)->ConfigureNamespace("bench", {{"events_maxlen", with_events ? "" : "0"}});
    if (!settings.ok()) Die(settings.status().ToString());
    if ((settings->events_maxlen > 0) != (with_events == 1)) Die("events_maxlen not applied");
    // Warm up the per-namespace keys so their fixed cost is not counted per task.
    auto warm = Requests(100, PayloadJson(o.payload));
    (void)(*client)->EnqueueMany(warm);
    double before = InfoField(*admin, "memory", "used_memory");
    auto batch = Requests(100, PayloadJson(o.payload));
    for (int sent = 0; sent < o.tasks; sent += 100) {
      auto r = (*client)->EnqueueMany(batch);
      if (!r.ok()) Die(r.status().ToString());
    }
    double after = InfoField(*admin, "memory", "used_memory");
    (with_events ? out.second : out.first) = (after - before) / o.tasks;
  }
  return out;
}

std::pair<double, double> LightLoadLatency(const Options& o) {
  auto admin = Connect(o);
  Reset(*admin);
  std::vector<double> lat_ms;
  lat_ms.reserve(o.latency_tasks);
  std::mutex mu;
  baton::WorkerOptions wo;
  wo.redis.url = o.redis;
  wo.default_concurrency = 1;
  baton::Worker worker(wo);
  baton::Status registered = worker.Register("bench", "latency", [&](baton::TaskContext& ctx) {
    auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count();
    auto sent = ctx.task().Payload()["sent_us"].get<long long>();
    std::lock_guard lock(mu);
    lat_ms.push_back((now - sent) / 1000.0);
    return baton::Status::Ok();
  });
  if (!registered.ok()) Die(registered.ToString());
  if (auto st = worker.Start(); !st.ok()) Die(st.ToString());
  baton::ClientOptions co;
  co.redis.url = o.redis;
  auto client = baton::Client::Connect(co);
  if (!client.ok()) Die(client.status().ToString());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto next = Clock::now();
  for (int i = 0; i < o.latency_tasks; ++i) {
    next += std::chrono::microseconds(5000);  // 200 tasks/s
    std::this_thread::sleep_until(next);
    baton::TaskRequest r;
    r.ns = "bench";
    r.task_type = "latency";
    r.payload = {{"sent_us", std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count()}};
    auto res = (*client)->Enqueue(r);
    if (!res.ok()) Die(res.status().ToString());
  }
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    {
      std::lock_guard lock(mu);
      if (static_cast<int>(lat_ms.size()) >= o.latency_tasks) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  worker.Stop();
  std::lock_guard lock(mu);
  if (lat_ms.empty()) Die("no latency samples");
  std::sort(lat_ms.begin(), lat_ms.end());
  auto pct = [&](double p) {
    return lat_ms[std::min(lat_ms.size() - 1, size_t(p * lat_ms.size()))];
  };
  return {pct(0.50), pct(0.99)};
}

// The same light load on the bare pattern: XADD one at a time; one consumer thread in XREADGROUP
// BLOCK takes the time as soon as the entry arrives (no handler thread): the floor of the
// network, Redis and thread wake-ups under Baton's figure.
std::pair<double, double> BareLightLoadLatency(const Options& o) {
  auto admin = Connect(o);
  Reset(*admin);
  const std::string stream = "bench:bare-light";
  Must(*admin, {"XGROUP", "CREATE", stream, "g", "0", "MKSTREAM"});
  std::vector<double> lat_ms;
  lat_ms.reserve(o.latency_tasks);
  std::thread consumer([&] {
    auto c = Connect(o);
    while (static_cast<int>(lat_ms.size()) < o.latency_tasks) {
      auto r = c->BlockingCommand(
          {"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "BLOCK", "2000", "STREAMS", stream, ">"},
          std::chrono::milliseconds(2000));
      auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
      if (!r.ok()) Die(r.status().ToString());
      if (r->is_nil()) break;  // the producer stopped
      for (auto& e : r->elements[0].elements[1].elements) {
        long long sent = std::atoll(e.elements[1].elements[1].str.c_str());
        lat_ms.push_back((now - sent) / 1000.0);
        Must(*c, {"XACK", stream, "g", e.elements[0].str});
      }
    }
  });
  auto c = Connect(o);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto next = Clock::now();
  for (int i = 0; i < o.latency_tasks; ++i) {
    next += std::chrono::microseconds(5000);  // 200 tasks/s
    std::this_thread::sleep_until(next);
    auto sent = std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
    Must(*c, {"XADD", stream, "*", "sent_us", std::to_string(sent)});
  }
  consumer.join();
  if (lat_ms.empty()) Die("no bare latency samples");
  std::sort(lat_ms.begin(), lat_ms.end());
  auto pct = [&](double p) {
    return lat_ms[std::min(lat_ms.size() - 1, size_t(p * lat_ms.size()))];
  };
  return {pct(0.50), pct(0.99)};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--commandstats") {
      o.commandstats = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) Die("missing value for " + k);
    if (k == "--redis")
      o.redis = argv[i + 1];
    else if (k == "--tasks")
      o.tasks = std::atoi(argv[i + 1]);
    else if (k == "--payload")
      o.payload = std::atoi(argv[i + 1]);
    else if (k == "--concurrency")
      o.concurrency = std::atoi(argv[i + 1]);
    else if (k == "--latency-tasks")
      o.latency_tasks = std::atoi(argv[i + 1]);
    else
      Die("unknown option " + k);
  }
  o.tasks = (o.tasks / 100) * 100;
  std::printf("tasks=%d payload=%dB worker concurrency=%d\n", o.tasks, o.payload, o.concurrency);
  auto bare = BareStreams(o);
  double bare_rate = o.tasks / bare.seconds;
  std::printf(
      "bare streams : %9.0f tasks/s  redis cpu %5.2f us/task  client cpu %5.2f us/task  "
      "%.2f switches/task\n",
      bare_rate, bare.cpu_us_per_task, bare.client_cpu_us_per_task, bare.client_switches_per_task);
  auto bt = BatonDrain(o);
  double baton_rate = o.tasks / bt.seconds;
  std::printf(
      "baton        : %9.0f tasks/s  redis cpu %5.2f us/task  client cpu %5.2f us/task  "
      "%.2f switches/task  ratio to bare %.2f\n",
      baton_rate, bt.cpu_us_per_task, bt.client_cpu_us_per_task, bt.client_switches_per_task,
      baton_rate / bare_rate);
  auto [mem_no_events, mem_events] = MemoryPerTask(o);
  std::printf("memory       : %6.0f bytes per queued task (events off), %.0f with events on\n",
              mem_no_events, mem_events);
  auto [p50, p99] = LightLoadLatency(o);
  std::printf("light load   : 200 tasks/s, enqueue-to-start p50 %.3f ms  p99 %.3f ms\n", p50, p99);
  auto [bare_p50, bare_p99] = BareLightLoadLatency(o);
  std::printf("light bare   : 200 tasks/s, XADD-to-read     p50 %.3f ms  p99 %.3f ms\n", bare_p50,
              bare_p99);
  return 0;
}
