// What baton-collector costs the queue Redis: drives tasks through Baton as bench_throughput's
// baton phase does (Client::EnqueueMany batches of 100 from one producer thread, one Worker with a
// no-op handler, concurrency 64, fetch batch 100, namespace "bench" at its default settings: events
// on) and prints Redis CPU per task and every command's calls per task (INFO commandstats: the
// commands the functions run inside Redis are counted too).
//
//   collector_drive --redis URL --tasks N [--wait-collector]
//       100 warm-up tasks, then CONFIG RESETSTAT and N tasks enqueued and drained. With
//       --wait-collector the window ends only once the baton-collector group on the events stream
//       has caught up (delivered up to the stream's last id, nothing pending), so that the
//       collector's reads of those N tasks' events are counted.
//   collector_drive --redis URL --catch-up N
//       Nothing is driven: CONFIG RESETSTAT, prints "ready", then waits until the collector group
//       exists and has caught up: run it while the events of N drained tasks wait in the stream and
//       start baton-collector after "ready": the window holds the collector's work only.
// Redis CPU is used_cpu_user + used_cpu_sys over the window less Redis's idle rate (measured over
// 3 s just before, with the same clients idle) times the window's length: the windows that wait for
// the collector are long, and an idle Redis still spends a few ms/s. The time in the commands
// themselves (commandstats usec) is printed too. The group is polled every 500 ms; this program's
// own commands (INFO, HLEN, EXISTS, XINFO) are subtracted from the call counts.
#include <baton/client.h>
#include <baton/worker.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "broker/keys.h"
#include "broker/redis_connection.h"

namespace {

using Clock = std::chrono::steady_clock;
using baton::internal::RedisConnection;
using baton::internal::RedisEndpoint;
using baton::internal::Reply;

constexpr const char* kNamespace = "bench";
constexpr const char* kGroup = "baton-collector";

struct Options {
  std::string redis;
  int tasks = 100000;
  bool wait_collector = false;
  int catch_up = 0;  // > 0: --catch-up N
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "collector_drive: %s\n", what.c_str());
  std::exit(1);
}

// The admin connection, counting the commands it sends (to subtract them from commandstats).
class Admin {
 public:
  explicit Admin(const std::string& url) {
    auto ep = RedisEndpoint::Parse(url);
    if (!ep.ok()) Die(ep.status().ToString());
    auto c = RedisConnection::Open(*ep);
    if (!c.ok()) Die(c.status().ToString());
    conn_ = std::move(*c);
  }

  Reply Must(const std::vector<std::string>& argv) {
    std::string name = Lower(argv[0]);
    if ((name == "xinfo" || name == "config" || name == "client") && argv.size() > 1) {
      name += "|" + Lower(argv[1]);
    }
    ++own_[name];
    auto r = conn_->Command(argv);
    if (!r.ok()) Die(r.status().ToString());
    if (r->is_error()) Die(argv[0] + ": " + r->str);
    return std::move(*r);
  }

  double CpuSeconds() {
    const std::string info = Must({"INFO", "cpu"}).str;
    auto field = [&info](const std::string& f) {
      const auto pos = info.find(f + ":");
      if (pos == std::string::npos) Die("INFO has no " + f);
      return std::strtod(info.c_str() + pos + f.size() + 1, nullptr);
    };
    return field("used_cpu_user") + field("used_cpu_sys");
  }

  void ResetStats() {
    Must({"CONFIG", "RESETSTAT"});
    own_.clear();
    own_["config|resetstat"] = 1;  // counted once it returned, after the reset
  }

  struct Stat {
    double calls = 0, usec = 0;
  };
  // Calls and time in execution (usec) of every command since the last ResetStats(), our calls
  // left out (an INFO is counted by Redis once it returns, so the one that reads the stats is not
  // in them yet; the time of our few polls stays in, a few microseconds each).
  std::map<std::string, Stat> CommandStats() {
    const std::string info = Must({"INFO", "commandstats"}).str;
    --own_["info"];
    std::map<std::string, Stat> stats;
    for (std::size_t pos = 0; (pos = info.find("cmdstat_", pos)) != std::string::npos;) {
      const auto colon = info.find(':', pos);
      const auto calls = info.find("calls=", colon);
      const auto usec = info.find("usec=", calls);
      const std::string name = info.substr(pos + 8, colon - pos - 8);
      stats[name] = {std::strtod(&info[calls + 6], nullptr) - static_cast<double>(own_[name]),
                     std::strtod(&info[usec + 5], nullptr)};
      pos = colon;
    }
    return stats;
  }

  // Redis CPU per second with nothing but the clients' idle polling, over `seconds`.
  double IdleCpuRate(int seconds) {
    const double before = CpuSeconds();
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    return (CpuSeconds() - before) / seconds;
  }

 private:
  static std::string Lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }

  std::unique_ptr<RedisConnection> conn_;
  std::map<std::string, long long> own_;
};

// A field of a flat XINFO reply (name, value, name, value, ...).
const Reply* Field(const Reply& r, const std::string& name) {
  for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) {
    if (r.elements[i].str == name) return &r.elements[i + 1];
  }
  return nullptr;
}

// True when the collector group on the events stream has delivered everything and has no pending.
bool CollectorCaughtUp(Admin& admin) {
  const std::string key = baton::internal::Keys(kNamespace).Events();
  if (admin.Must({"EXISTS", key}).integer == 0) return false;
  const Reply stream = admin.Must({"XINFO", "STREAM", key});
  const Reply groups = admin.Must({"XINFO", "GROUPS", key});
  const Reply* last = Field(stream, "last-generated-id");
  for (const Reply& g : groups.elements) {
    const Reply* name = Field(g, "name");
    if (name == nullptr || name->str != kGroup) continue;
    const Reply* delivered = Field(g, "last-delivered-id");
    const Reply* pending = Field(g, "pending");
    return last && delivered && pending && delivered->str == last->str && pending->integer == 0;
  }
  return false;
}

void WaitForCollector(Admin& admin, int seconds) {
  const auto deadline = Clock::now() + std::chrono::seconds(seconds);
  while (!CollectorCaughtUp(admin)) {
    if (Clock::now() > deadline) {
      Die("baton-collector did not catch up with the events stream within " +
          std::to_string(seconds) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

std::vector<baton::TaskRequest> Requests(int n) {
  std::vector<baton::TaskRequest> v(static_cast<std::size_t>(n));
  // {"data":"xxx..."} of 200 bytes, bench_throughput's payload.
  const auto payload = nlohmann::json{{"data", std::string(189, 'x')}};
  for (auto& r : v) {
    r.ns = kNamespace;
    r.task_type = "noop";
    r.payload = payload;
  }
  return v;
}

// Prints Redis CPU per task over the window: used_cpu_user + used_cpu_sys, less what Redis spends
// idle (measured just before, same clients: serverCron, the clients' blocking reads) over the
// window's length; then every command's calls and execution time (commandstats usec) per task. With
// `total_usec`, the sum of those times too (only where no function ran: an FCALL's time holds that
// of the commands it ran, which are listed as well).
void Report(Admin& admin, const char* label, int tasks, double seconds, double cpu_seconds,
            double idle_rate, bool total_usec) {
  const auto stats = admin.CommandStats();
  double usec = 0;
  for (const auto& [name, st] : stats) usec += st.usec;
  std::printf(
      "%s: %d tasks in %.2f s, redis cpu %.2f us/task (used_cpu %.3f s less idle %.2f ms/s x "
      "%.2f s)",
      label, tasks, seconds, (cpu_seconds - idle_rate * seconds) * 1e6 / tasks, cpu_seconds,
      idle_rate * 1e3, seconds);
  if (total_usec) std::printf(", in commands %.2f us/task", usec / tasks);
  std::printf("\n");
  for (const auto& [name, st] : stats) {
    if (st.calls > 0) {
      std::printf("  cmd %-24s %.5f calls/task %8.3f us/task\n", name.c_str(), st.calls / tasks,
                  st.usec / tasks);
    }
  }
}

void Drive(const Options& o) {
  Admin admin(o.redis);
  std::atomic<int> handled{0};
  baton::WorkerOptions wo;
  wo.redis.url = o.redis;
  wo.default_concurrency = 64;
  wo.fetch_batch = 100;
  baton::Worker worker(wo);
  baton::Status registered = worker.Register(kNamespace, "noop", [&](baton::TaskContext&) {
    handled.fetch_add(1, std::memory_order_relaxed);
    return baton::Status::Ok();
  });
  if (!registered.ok()) Die(registered.ToString());
  if (auto st = worker.Start(); !st.ok()) Die(st.ToString());
  baton::ClientOptions co;
  co.redis.url = o.redis;
  auto client = baton::Client::Connect(co);
  if (!client.ok()) Die(client.status().ToString());
  const auto batch = Requests(100);
  const std::string tasks_key = baton::internal::Keys(kNamespace).Tasks();
  auto drain = [&](int target) {
    while (admin.Must({"HLEN", tasks_key}).integer != 0 || handled.load() < target) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  };

  // Warm-up: the namespace and its keys exist, the worker runs, the collector follows the stream.
  if (auto r = (*client)->EnqueueMany(batch); !r.ok()) Die(r.status().ToString());
  drain(100);
  if (o.wait_collector) WaitForCollector(admin, 120);
  const double idle_rate = admin.IdleCpuRate(3);

  admin.ResetStats();
  const double cpu0 = admin.CpuSeconds();
  const auto start = Clock::now();
  std::thread producer([&] {
    baton::ClientOptions pco;
    pco.redis.url = o.redis;
    auto c = baton::Client::Connect(pco);
    if (!c.ok()) Die(c.status().ToString());
    for (int sent = 0; sent < o.tasks; sent += 100) {
      if (auto r = (*c)->EnqueueMany(batch); !r.ok()) Die(r.status().ToString());
    }
  });
  producer.join();
  drain(100 + o.tasks);
  const double drained_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (o.wait_collector) WaitForCollector(admin, 1800);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = admin.CpuSeconds() - cpu0;
  worker.Stop();
  if (o.wait_collector) {
    std::printf("drained in %.2f s, collector caught up %.2f s later\n", drained_s,
                seconds - drained_s);
  }
  Report(admin, o.wait_collector ? "with collector" : "no collector", o.tasks, seconds, cpu,
         idle_rate, false);
}

void CatchUp(const Options& o) {
  Admin admin(o.redis);
  const double idle_rate = admin.IdleCpuRate(3);
  admin.ResetStats();
  const double cpu0 = admin.CpuSeconds();
  std::printf("ready\n");
  std::fflush(stdout);
  const auto start = Clock::now();
  WaitForCollector(admin, 1800);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Report(admin, "collector catch-up", o.catch_up, seconds, admin.CpuSeconds() - cpu0, idle_rate,
         true);
  std::printf(
      "collector read and stored the %d event rows (3 per task) in %.1f s: %.0f rows/s end "
      "to end (within 0.5 s)\n",
      3 * o.catch_up, seconds, 3.0 * o.catch_up / seconds);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--wait-collector") {
      o.wait_collector = true;
      continue;
    }
    if (i + 1 >= argc) Die("missing value for " + k);
    const char* v = argv[++i];
    if (k == "--redis") {
      o.redis = v;
    } else if (k == "--tasks") {
      o.tasks = std::atoi(v) / 100 * 100;
    } else if (k == "--catch-up") {
      o.catch_up = std::atoi(v);
    } else {
      Die("unknown option " + k +
          " (usage: --redis URL [--tasks N [--wait-collector] | --catch-up N])");
    }
  }
  if (o.redis.empty()) Die("--redis is required");
  if (o.catch_up > 0) {
    CatchUp(o);
  } else {
    if (o.tasks <= 0) Die("--tasks must be at least 100");
    Drive(o);
  }
  return 0;
}
