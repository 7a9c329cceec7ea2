// baton-collector end to end, on both stores: real redis-server, real baton-collector processes,
// real C++ workers. The numbers in the store must equal what the workers did, whatever happens to
// the collectors (kill -9 mid-stream, two of them at once, a long outage that trimmed events).
#include <baton/client.h>
#include <baton/worker.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "harness/postgres_server.h"
#include "harness/process.h"
#include "harness/redis_server.h"
#include "sql_database.h"

namespace baton::collector {
namespace {

using namespace std::chrono;
using baton::testing::PostgresServer;
using baton::testing::Process;
using baton::testing::RedisServer;
using baton::testing::TempDir;
using nlohmann::json;

// One baton-collector process with its log and HTTP port.
class CollectorProcess {
 public:
  CollectorProcess(const std::string& redis_url, const std::string& store, const std::string& dir,
                   const std::string& name, std::vector<std::string> extra = {})
      : log_(dir + "/" + name + ".log") {
    std::vector<std::string> argv = {BATON_COLLECTOR_PATH,
                                     "--redis",
                                     redis_url,
                                     "--store",
                                     store,
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--name",
                                     name,
                                     "--sample-interval-ms",
                                     "500",
                                     "--discovery-interval-ms",
                                     "200",
                                     "--block-ms",
                                     "100",
                                     "--log-level",
                                     "debug"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    process_ = std::make_unique<Process>(argv, log_);
  }
  // The HTTP port the collector bound (port 0 = any free one: no race with other tests), read
  // from its log; 0 when it did not start serving within 10 s.
  int port() {
    const std::string marker = "/metrics on http://127.0.0.1:";
    // A collector that exited (it logged why) never serves: no waiting for it.
    for (int i = 0; port_ == 0 && i < 500 && process_->Running(); ++i) {
      const std::string log = Log();
      const auto at = log.rfind(marker);  // a restart under the same name appends
      if (at != std::string::npos) {
        port_ = std::atoi(log.c_str() + at + marker.size());
      } else {
        std::this_thread::sleep_for(milliseconds(20));
      }
    }
    return port_;
  }
  Process& process() { return *process_; }
  std::string Log() const { return baton::testing::ReadFile(log_); }

  // GET path -> parsed JSON (null on failure).
  json Get(const std::string& path) {
    httplib::Client http("127.0.0.1", port());
    http.set_connection_timeout(2);
    auto res = http.Get(path);
    if (!res || res->status != 200) return nullptr;
    return json::parse(res->body, nullptr, false);
  }
  std::string Metrics() {
    httplib::Client http("127.0.0.1", port());
    auto res = http.Get("/metrics");
    return res && res->status == 200 ? res->body : "";
  }

 private:
  int port_ = 0;
  std::string log_;
  std::unique_ptr<Process> process_;
};

// The value of one sample line of a Prometheus text body (-1 when absent).
std::int64_t MetricValue(const std::string& body, const std::string& line_prefix) {
  const auto at = body.find("\n" + line_prefix + " ");
  if (at == std::string::npos) return -1;
  return std::stoll(body.substr(at + line_prefix.size() + 2));
}

bool WaitUntil(const std::function<bool()>& done, milliseconds timeout = seconds(30)) {
  const auto deadline = steady_clock::now() + timeout;
  while (steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return done();
}

class CollectorE2eTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { postgres_ = new PostgresServer(); }
  static void TearDownTestSuite() {
    delete postgres_;
    postgres_ = nullptr;
  }

  void SetUp() override {
    redis_.LoadFunctions();
    if (GetParam() == "sqlite") {
      store_ = "sqlite://" + dir_.path() + "/stats.db";
    } else {
      store_ = postgres_->NewDatabaseUrl();
    }
    ClientOptions options;
    options.redis.url = redis_.url();
    auto client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
  }

  // Rows of `sql` on a fresh store connection (the collectors write; the test only reads).
  std::int64_t StoreScalar(const std::string& sql) {
    auto db = OpenSqlDatabase(store_);
    if (!db.ok()) return -1;
    auto rows = (*db)->Query(sql);
    if (!rows.ok() || rows->empty() || IsNull((*rows)[0][0])) return -1;
    return AsInt((*rows)[0][0]);
  }

  // Enqueues `n` tasks of (ns, type) with payload {"n": i}, in batches of `batch`.
  void Enqueue(const std::string& ns, const std::string& type, int n, int batch = 50) {
    for (int start = 0; start < n; start += batch) {
      std::vector<TaskRequest> requests;
      for (int i = start; i < std::min(n, start + batch); ++i) {
        TaskRequest r;
        r.ns = ns;
        r.task_type = type;
        r.payload = {{"n", i}};
        r.options.max_retry = 2;
        requests.push_back(std::move(r));
      }
      auto results = client_->EnqueueMany(requests);
      ASSERT_TRUE(results.ok()) << results.status().ToString();
    }
  }

  // The rows the store must end up with: one per id of every entry of the events stream.
  std::int64_t RowsInEventsStream(const std::string& ns) {
    std::int64_t rows = 0;
    std::string start = "-";
    for (;;) {
      auto reply =
          redis_.Command({"XRANGE", "baton:v2:{" + ns + "}:events", start, "+", "COUNT", "1000"});
      if (reply->elements == 0) return rows;
      for (std::size_t i = 0; i < reply->elements; ++i) {
        const redisReply* entry = reply->element[i];
        const redisReply* fields = entry->element[1];
        for (std::size_t f = 0; f + 1 < fields->elements; f += 2) {
          if (std::string(fields->element[f]->str) == "ids") {
            std::string ids = fields->element[f + 1]->str;
            rows += 1 + std::count(ids.begin(), ids.end(), ' ');
          }
        }
        start = "(" + std::string(entry->element[0]->str);
      }
    }
  }

  std::unique_ptr<Worker> StartWorker(const std::string& ns, const std::string& type,
                                      Handler handler) {
    WorkerOptions options;
    options.redis.url = redis_.url();
    options.block = milliseconds(100);
    options.maintenance = true;  // promotes the retries: no batond in these tests
    options.service = "e2e";
    auto worker = std::make_unique<Worker>(options);
    TypeOptions type_options;
    type_options.retry.base = milliseconds(50);
    type_options.retry.max = milliseconds(100);
    EXPECT_TRUE(worker->Register(ns, type, std::move(handler), type_options).ok());
    EXPECT_TRUE(worker->Start().ok());
    return worker;
  }

  static inline PostgresServer* postgres_ = nullptr;
  TempDir dir_;
  RedisServer redis_;
  std::string store_;
  std::unique_ptr<Client> client_;
};

TEST_P(CollectorE2eTest, TheStoreCountsExactlyWhatTheWorkersDid) {
  CollectorProcess collector(redis_.url(), store_, dir_.path(), "c1");
  constexpr int kTasks = 300;
  // n % 10 == 0: dead at once; n % 7 == 0 (otherwise): fails its first attempt, then succeeds.
  auto handler = [](TaskContext& ctx) -> Status {
    const int n = ctx.task().Payload()["n"];
    if (n % 10 == 0) return NonRetryable("boom " + std::to_string(n));
    if (n % 7 == 0 && ctx.attempt() == 1) return Status::Internal("flaky " + std::to_string(n));
    return Status::Ok();
  };
  auto worker = StartWorker("shop", "mail", handler);
  Enqueue("shop", "mail", kTasks);
  int dead = 0, retried = 0;
  for (int n = 0; n < kTasks; ++n) {
    if (n % 10 == 0) {
      ++dead;
    } else if (n % 7 == 0) {
      ++retried;
    }
  }
  ASSERT_TRUE(WaitUntil([&] {
    auto s = worker->stats();
    return s.succeeded == static_cast<std::uint64_t>(kTasks - dead) &&
           s.dead == static_cast<std::uint64_t>(dead);
  })) << "worker stats: succeeded "
      << worker->stats().succeeded;
  const WorkerStats did = worker->stats();
  worker->Stop();
  ASSERT_TRUE(WaitUntil([&] {
    return StoreScalar("SELECT succeeded FROM type_totals") ==
               static_cast<std::int64_t>(did.succeeded) &&
           StoreScalar("SELECT dead FROM type_totals") == dead;
  })) << collector.Log();
  EXPECT_EQ(StoreScalar("SELECT enqueued FROM type_totals"), kTasks);
  EXPECT_EQ(StoreScalar("SELECT failed FROM type_totals"), retried);
  EXPECT_EQ(static_cast<std::uint64_t>(retried + dead), did.failed);
  EXPECT_EQ(StoreScalar("SELECT started FROM type_totals"), kTasks + retried);
  EXPECT_EQ(StoreScalar("SELECT run_count FROM type_totals"), kTasks + retried);
  EXPECT_EQ(StoreScalar("SELECT COUNT(*) FROM events"), RowsInEventsStream("shop"));

  // The API says the same.
  json overview = collector.Get("/api/overview");
  ASSERT_TRUE(overview.is_object());
  ASSERT_EQ(overview["namespaces"].size(), 1u);
  const json& today = overview["namespaces"][0]["today"];
  EXPECT_EQ(today["succeeded"], did.succeeded);
  EXPECT_EQ(today["dead"], dead);
  EXPECT_EQ(overview["namespaces"][0]["complete"], true);
  const std::string metrics = collector.Metrics();
  EXPECT_EQ(MetricValue(metrics,
                        R"(baton_tasks_total{namespace="shop",type="mail",outcome="succeeded"})"),
            static_cast<std::int64_t>(did.succeeded));
  EXPECT_EQ(MetricValue(metrics, R"(baton_task_run_seconds_count{namespace="shop",type="mail"})"),
            kTasks + retried);
  // A dead task's page: its error and the worker's language.
  json dead_list = collector.Get("/api/dead?namespace=shop&q=boom%20290");
  ASSERT_TRUE(dead_list.is_object());
  ASSERT_EQ(dead_list["tasks"].size(), 1u);
  json timeline =
      collector.Get("/api/tasks/" + dead_list["tasks"][0]["task_id"].get<std::string>());
  ASSERT_TRUE(timeline.is_object());
  EXPECT_EQ(timeline["state"], "dead");
  EXPECT_EQ(timeline["events"].back()["error"], "non_retryable: boom 290");
  EXPECT_EQ(timeline["events"].back()["language"], "cpp");
  EXPECT_FALSE(timeline["events"].back().value("stack", "").empty());
  // The sampler saw the queue and the worker.
  ASSERT_TRUE(WaitUntil([&] {
    json o = collector.Get("/api/overview");
    return o.is_object() && o["namespaces"][0]["types"]["mail"].contains("queue") &&
           o["namespaces"][0]["types"]["mail"]["queue"]["dead"] == dead;
  })) << collector.Get("/api/overview").dump();
  json daily = collector.Get("/api/daily?namespace=shop&days=2");
  ASSERT_TRUE(daily.is_object());
  ASSERT_EQ(daily["days"].size(), 1u);
  EXPECT_EQ(daily["days"][0]["succeeded"], did.succeeded);
  EXPECT_EQ(collector.Get("/healthz")["status"], "ok");
  json workers = collector.Get("/api/workers");
  ASSERT_TRUE(workers.is_object());
  EXPECT_EQ(workers["by_language"]["cpp"], 1);
}

TEST_P(CollectorE2eTest, KillNineMidStreamLosesAndDoublesNothing) {
  constexpr int kTasks = 3000;
  Enqueue("shop", "mail", kTasks, 5);  // 600 entries of 5 ids
  const std::int64_t expected = RowsInEventsStream("shop");
  {
    // Small reads, so that the kill lands between batches.
    CollectorProcess first(redis_.url(), store_, dir_.path(), "c1", {"--batch", "20"});
    ASSERT_TRUE(
        WaitUntil([&] { return StoreScalar("SELECT COUNT(*) FROM events") > 200; }, seconds(30)))
        << first.Log();
    first.process().Kill();
  }
  const std::int64_t stored_at_kill = StoreScalar("SELECT COUNT(*) FROM events");
  ASSERT_LT(stored_at_kill, expected) << "the collector finished before the kill: no test";
  // Another collector (another name) takes over the dead one's unacked entries.
  CollectorProcess second(redis_.url(), store_, dir_.path(), "c2", {"--claim-idle-ms", "500"});
  ASSERT_TRUE(WaitUntil([&] { return StoreScalar("SELECT COUNT(*) FROM events") == expected; }))
      << "stored " << StoreScalar("SELECT COUNT(*) FROM events") << " of " << expected << "\n"
      << second.Log();
  EXPECT_EQ(StoreScalar("SELECT enqueued FROM type_totals"), kTasks);
  EXPECT_EQ(StoreScalar("SELECT SUM(enqueued) FROM minute_stats"), kTasks);
  EXPECT_EQ(StoreScalar("SELECT SUM(enqueued) FROM daily_stats"), kTasks);
  EXPECT_EQ(StoreScalar("SELECT COUNT(*) FROM task_state"), kTasks);
  // Nothing is left pending in the group.
  ASSERT_TRUE(WaitUntil([&] {
    auto pending = redis_.Command({"XPENDING", "baton:v2:{shop}:events", "baton-collector"});
    return pending->element[0]->integer == 0;
  }));
}

TEST_P(CollectorE2eTest, TwoCollectorsShareANamespaceWithoutDoubleCounting) {
  CollectorProcess a(redis_.url(), store_, dir_.path(), "a", {"--batch", "10"});
  CollectorProcess b(redis_.url(), store_, dir_.path(), "b", {"--batch", "10"});
  auto worker = StartWorker("shop", "mail", [](TaskContext&) { return Status::Ok(); });
  // Produce until both collectors have stored a part (each reads 10 entries at a time).
  int tasks = 0;
  for (int round = 0; round < 200; ++round) {
    Enqueue("shop", "mail", 20, 2);
    tasks += 20;
    if (MetricValue(a.Metrics(), "baton_collector_events_stored_total") > 0 &&
        MetricValue(b.Metrics(), "baton_collector_events_stored_total") > 0 && tasks >= 400) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  const int kTasks = tasks;
  ASSERT_TRUE(
      WaitUntil([&] { return worker->stats().succeeded == static_cast<std::uint64_t>(kTasks); }));
  worker->Stop();
  const std::int64_t expected = RowsInEventsStream("shop");
  ASSERT_TRUE(WaitUntil([&] { return StoreScalar("SELECT COUNT(*) FROM events") == expected; }))
      << a.Log() << b.Log();
  EXPECT_EQ(StoreScalar("SELECT enqueued FROM type_totals"), kTasks);
  EXPECT_EQ(StoreScalar("SELECT succeeded FROM type_totals"), kTasks);
  EXPECT_EQ(StoreScalar("SELECT run_count FROM type_totals"), kTasks);
  // Both did part of the work, and together exactly all of it.
  const std::int64_t by_a = MetricValue(a.Metrics(), "baton_collector_events_stored_total");
  const std::int64_t by_b = MetricValue(b.Metrics(), "baton_collector_events_stored_total");
  EXPECT_GT(by_a, 0);
  EXPECT_GT(by_b, 0) << b.Log();
  EXPECT_EQ(by_a + by_b, expected);
}

TEST_P(CollectorE2eTest, EventsTrimmedWhileNoCollectorRanAreCountedAsLost) {
  Enqueue("shop", "mail", 100, 10);  // 10 entries
  {
    CollectorProcess first(redis_.url(), store_, dir_.path(), "c1");
    ASSERT_TRUE(WaitUntil([&] { return StoreScalar("SELECT COUNT(*) FROM events") == 100; }));
    first.process().Signal(SIGTERM);
    ASSERT_TRUE(first.process().Wait(seconds(10)).has_value());
  }
  // The collector is down; 50 more entries arrive, then the stream is trimmed to its newest 12.
  Enqueue("shop", "mail", 500, 10);
  redis_.Command({"XTRIM", "baton:v2:{shop}:events", "MAXLEN", "12"});
  CollectorProcess second(redis_.url(), store_, dir_.path(), "c1");
  ASSERT_TRUE(WaitUntil([&] { return StoreScalar("SELECT COUNT(*) FROM events") == 100 + 120; }))
      << second.Log();
  ASSERT_TRUE(WaitUntil([&] {
    return StoreScalar("SELECT MAX(lost_total) FROM event_gaps") == 38;
  })) << second.Log();
  json overview = second.Get("/api/overview");
  ASSERT_TRUE(overview.is_object());
  EXPECT_EQ(overview["namespaces"][0]["events_lost"], 38);
  EXPECT_EQ(overview["namespaces"][0]["complete"], false);
  EXPECT_EQ(MetricValue(second.Metrics(), R"(baton_events_lost_total{namespace="shop"})"), 38);
  // More events afterwards: the gap is counted once.
  Enqueue("shop", "mail", 10, 10);
  ASSERT_TRUE(WaitUntil([&] { return StoreScalar("SELECT COUNT(*) FROM events") == 230; }));
  std::this_thread::sleep_for(milliseconds(2500));  // a gap check ran
  EXPECT_EQ(StoreScalar("SELECT MAX(lost_total) FROM event_gaps"), 38);
  EXPECT_EQ(StoreScalar("SELECT COUNT(*) FROM event_gaps"), 1);
}

TEST_P(CollectorE2eTest, HistoryTrimmedBeforeTheFirstCollectorIsNotALoss) {
  Enqueue("shop", "mail", 100, 10);  // 10 entries, then only the newest 4 are kept
  redis_.Command({"XTRIM", "baton:v2:{shop}:events", "MAXLEN", "4"});
  CollectorProcess collector(redis_.url(), store_, dir_.path(), "c1");
  ASSERT_TRUE(WaitUntil([&] { return StoreScalar("SELECT COUNT(*) FROM events") == 40; }))
      << collector.Log();
  std::this_thread::sleep_for(milliseconds(2500));  // a gap check ran
  EXPECT_EQ(StoreScalar("SELECT COUNT(*) FROM event_gaps"), 0);
  json overview = collector.Get("/api/overview");
  ASSERT_TRUE(overview.is_object());
  EXPECT_EQ(overview["namespaces"][0]["complete"], true);
  EXPECT_NE(collector.Log().find("6 events were trimmed before the first collector"),
            std::string::npos);
}

TEST_P(CollectorE2eTest, AMalformedEntryIsKeptAsideAndANewNamespaceIsPickedUp) {
  CollectorProcess collector(redis_.url(), store_, dir_.path(), "c1",
                             {"--scan-interval-ms", "1000"});
  Enqueue("shop", "mail", 5, 5);
  ASSERT_TRUE(WaitUntil([&] { return StoreScalar("SELECT COUNT(*) FROM events") == 5; }));
  redis_.Command({"XADD", "baton:v2:{shop}:events", "*", "type", "mail", "from", "new", "to",
                  "flying", "worker", "", "ids", "x", "attempts", "0", "error", ""});
  // A namespace nobody registered, created while the collector runs.
  Enqueue("late", "sms", 3, 3);
  ASSERT_TRUE(WaitUntil([&] { return StoreScalar("SELECT COUNT(*) FROM events") == 8; }))
      << collector.Log();
  EXPECT_EQ(StoreScalar("SELECT COUNT(*) FROM rejected_events WHERE reason LIKE 'to: must be a "
                        "task state%'"),
            1);
  EXPECT_TRUE(collector.process().Running());
  const std::string metrics = collector.Metrics();
  EXPECT_EQ(MetricValue(metrics, "baton_collector_entries_rejected_total"), 1);
  // A followed stream deleted under the collector (its group with it) stops no other namespace.
  redis_.Command({"DEL", "baton:v2:{late}:events"});
  Enqueue("shop", "mail", 2, 2);
  ASSERT_TRUE(WaitUntil([&] { return StoreScalar("SELECT COUNT(*) FROM events") == 10; }))
      << collector.Log();
}

INSTANTIATE_TEST_SUITE_P(Stores, CollectorE2eTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace baton::collector
