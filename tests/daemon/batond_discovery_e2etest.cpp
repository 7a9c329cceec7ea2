// Real batond processes against real redis-servers, for the work no client asks for: leases of
// dead workers taken back (and never a live worker's, whatever batond's settings), namespaces
// nobody registered served all the same, and the cost of an idle batond.
#include <atomic>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "batond_fixture.h"
#include "broker/redis_connection.h"

namespace baton::e2e {
namespace {

using internal::testutil::RawDequeue;
using internal::testutil::RawEnqueue;

// Calls baton_v2_extend every `every` on its own connection until stopped; remembers the server
// time of the last heartbeat that still held the task.
class Heartbeat {
 public:
  Heartbeat(int port, std::string ns, std::string type, std::string group, std::string consumer,
            std::int64_t lease_ms, fn::HeldTask task, milliseconds every)
      : thread_([=, this] {
          internal::RedisEndpoint ep;
          ep.port = port;
          auto conn = internal::RedisConnection::Open(ep);
          if (!conn.ok()) {
            failed_ = true;
            return;
          }
          const fn::HeldTask held[] = {task};
          while (!stop_) {
            auto r = (*conn)->Command(fn::Extend(ns, type, group, consumer, lease_ms, held));
            auto now = (*conn)->Command({"TIME"});
            if (!r.ok() || !r->is_array() || !now.ok()) {
              failed_ = true;
            } else if (r->elements.size() == 1) {
              last_held_ms_ =
                  now->elements[0].AsInteger() * 1000 + now->elements[1].AsInteger() / 1000;
            } else {
              lost_ = true;  // the task was taken from its live worker
            }
            for (auto until = steady_clock::now() + every; !stop_ && steady_clock::now() < until;) {
              std::this_thread::sleep_for(milliseconds(10));
            }
          }
        }) {}
  ~Heartbeat() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool failed() const { return failed_; }
  bool lost() const { return lost_; }
  std::int64_t last_held_ms() const { return last_held_ms_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  std::atomic<bool> lost_{false};
  std::atomic<std::int64_t> last_held_ms_{0};
  std::thread thread_;
};

TEST_F(BatondTest, ReclaimsTheTaskOfAKilledWorkerAndSparesALiveOne) {
  Batond batond(redis_.url(), dir_.path(), "b1",
                {"--reaper-interval-ms", "100", "--retry-base-ms", "100", "--retry-max-ms", "100"});
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();
  auto client = Connect();
  ASSERT_NE(client, nullptr);
  baton::TaskRequest req;
  req.ns = kNs;
  req.task_type = "work";
  auto t1 = client->Enqueue(req);
  auto t2 = client->Enqueue(req);
  ASSERT_TRUE(t1.ok() && t2.ok());

  // "crashed" takes t1 for 1 s and never acks nor heartbeats (a killed worker's task).
  fn::HeldTask crashed = Dequeue("work", "g", "crashed", 1000);
  ASSERT_EQ(crashed.id, t1->task_id);
  // "alive" takes t2 for 1 s and heartbeats every 200 ms.
  fn::HeldTask alive = Dequeue("work", "g", "alive", 1000);
  ASSERT_EQ(alive.id, t2->task_id);
  Heartbeat heartbeat(redis_.port(), kNs, "work", "g", "alive", 1000, alive, milliseconds(200));

  // t1 is taken back after its lease, counted as a failed attempt, and retried.
  auto deadline = steady_clock::now() + seconds(15);
  bool retried = false;
  while (!retried && steady_clock::now() < deadline) {
    for (const StreamEntry& e : Stream("work")) {
      retried = retried || (e.fields.at("id") == t1->task_id && e.fields.at("attempt") == "1");
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(retried) << Record(t1->task_id) << "\n" << batond.Log();
  auto attempts = Errors(t1->task_id);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0]["kind"], "lease_expired");
  EXPECT_EQ(attempts[0]["worker"], "crashed");

  // Well past the lease, the heartbeating worker still holds t2.
  std::this_thread::sleep_for(milliseconds(1500));
  heartbeat.Stop();
  EXPECT_FALSE(heartbeat.failed());
  EXPECT_FALSE(heartbeat.lost());
  EXPECT_TRUE(Errors(t2->task_id).empty());
  auto pending =
      redis_.Command({"XPENDING", Keys(kNs).Stream("work"), "g", "-", "+", "10", "alive"});
  ASSERT_EQ(pending->elements, 1u);
  EXPECT_EQ(Str(pending->element[0]->element[0]), alive.sid);
  EXPECT_TRUE(batond.WaitForLog("tasks taken back", seconds(1))) << batond.Log();
}

// The first bug: batond took back, with its own --lease-ms, tasks whose worker had asked
// for a longer lease and kept heartbeating. Now the lease lives in Redis (delivery or last
// heartbeat + the lease length the holder asked for) and only the holder renews it: a batond
// checking every 100 ms never takes a live worker's task, and takes it back once the heartbeats
// stop and the lease ends, not before.
TEST_F(BatondTest, AHeartbeatingWorkerIsNeverReclaimed) {
  Batond batond(redis_.url(), dir_.path(), "b1", {"--reaper-interval-ms", "100"});
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();
  const std::vector<std::string> ids = RawEnqueue(redis_, kNs, "long", 1);
  ASSERT_EQ(ids.size(), 1u);
  std::vector<fn::HeldTask> held = RawDequeue(redis_, kNs, "long", "w1", 1, 6000);
  ASSERT_EQ(held.size(), 1u);
  const std::string queued_record = Record(ids[0]);
  ASSERT_EQ(queued_record, "queued|long|0|" + held[0].sid);

  Heartbeat heartbeat(redis_.port(), kNs, "long", "g", "w1", 6000, held[0], seconds(2));
  std::this_thread::sleep_for(seconds(8));  // longer than the lease
  EXPECT_FALSE(heartbeat.lost()) << batond.Log();
  // Still the first attempt, still held by w1.
  EXPECT_EQ(Record(ids[0]), queued_record);
  EXPECT_TRUE(Errors(ids[0]).empty());
  auto pending = redis_.Command({"XPENDING", Keys(kNs).Stream("long"), "g", "-", "+", "10"});
  ASSERT_EQ(pending->elements, 1u);
  EXPECT_EQ(Str(pending->element[0]->element[1]), "w1");
  EXPECT_EQ(pending->element[0]->element[3]->integer, 1);  // delivered once
  EXPECT_EQ(batond.Log().find("tasks taken back"), std::string::npos) << batond.Log();

  // The worker dies: taken back after its last deadline, as the failure of its first attempt.
  heartbeat.Stop();
  ASSERT_FALSE(heartbeat.failed());
  const std::int64_t last_held = heartbeat.last_held_ms();
  const std::int64_t deadline = LeaseEnd("long", "g", held[0].sid);
  EXPECT_GE(deadline, last_held + 6000 - 50);
  EXPECT_LE(deadline, last_held + 6000 + 5);  // the last extend came just before last_held
  auto give_up = steady_clock::now() + seconds(12);
  while (Record(ids[0]) == queued_record && steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  const std::int64_t taken = ServerMs();
  EXPECT_EQ(Record(ids[0]).rfind("retry|long|1|", 0), 0u) << Record(ids[0]);
  EXPECT_GE(taken, deadline);
  EXPECT_LT(taken - deadline, 1000);
  auto attempts = Errors(ids[0]);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0]["kind"], "lease_expired");
  EXPECT_EQ(attempts[0]["attempt"], 1);
}

// "batond promotes and reclaims every namespace that has work, whether or not a client remembered
// to register it": tasks written with the raw functions (which never touch baton:v2:namespaces),
// in a namespace created before batond started (found by its start-up SCAN) and in one created
// while it runs (announced on baton:v2:types).
TEST_F(BatondTest, ServesNamespacesNobodyRegistered) {
  const std::int64_t early_due = ServerMs() + 2500;
  const std::vector<std::string> early = RawEnqueue(redis_, "early", "mail", 1, early_due);
  const std::vector<std::string> early_work = RawEnqueue(redis_, "early", "work", 1);
  ASSERT_EQ(RawDequeue(redis_, "early", "work", "crashed", 1, 1000).size(), 1u);
  ASSERT_FALSE(Registered("early"));

  Batond batond(redis_.url(), dir_.path(), "b1", {"--retry-base-ms", "60000"});
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();
  EXPECT_TRUE(Registered("early")) << "batond registers what it finds";

  // Created after batond started.
  const std::int64_t late_due = ServerMs() + 1000;
  const std::vector<std::string> late = RawEnqueue(redis_, "late", "mail", 1, late_due);
  const std::vector<std::string> late_work = RawEnqueue(redis_, "late", "work", 1);
  ASSERT_EQ(RawDequeue(redis_, "late", "work", "crashed", 1, 1000).size(), 1u);

  // Delayed tasks are promoted on time.
  ASSERT_TRUE(WaitForStreamLength("mail", 1, seconds(10), "early")) << batond.Log();
  ASSERT_TRUE(WaitForStreamLength("mail", 1, seconds(10), "late")) << batond.Log();
  auto early_late = Lateness("mail", {{early[0], early_due}}, "early");
  auto late_late = Lateness("mail", {{late[0], late_due}}, "late");
  ASSERT_EQ(early_late.size(), 1u);
  ASSERT_EQ(late_late.size(), 1u);
  std::printf("unregistered namespaces: promoted %lld ms (early) and %lld ms (late) after due\n",
              static_cast<long long>(early_late[0]), static_cast<long long>(late_late[0]));
  EXPECT_GE(early_late[0], 0);
  EXPECT_LT(early_late[0], kLateBound.count());
  EXPECT_GE(late_late[0], 0);
  EXPECT_LT(late_late[0], kLateBound.count());

  // Abandoned leases are taken back.
  auto deadline = steady_clock::now() + seconds(10);
  while ((Errors(early_work[0], "early").empty() || Errors(late_work[0], "late").empty()) &&
         steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(Record(early_work[0], "early").rfind("retry|work|1|", 0), 0u)
      << Record(early_work[0], "early") << "\n"
      << batond.Log();
  EXPECT_EQ(Record(late_work[0], "late").rfind("retry|work|1|", 0), 0u)
      << Record(late_work[0], "late") << "\n"
      << batond.Log();
  EXPECT_TRUE(Registered("late"));
  EXPECT_NE(batond.Log().find("types=late/"), std::string::npos) << batond.Log();
}

// The commands clients sent to Redis during `window`, as MONITOR shows them (the commands the
// functions run inside Redis, tagged "lua", are not client commands and are left out).
std::vector<std::string> MonitorClientCommands(int port, milliseconds window) {
  std::vector<std::string> out;
  redisContext* c = redisConnect("127.0.0.1", port);
  if (c == nullptr || c->err != 0) return out;
  auto* ok = static_cast<redisReply*>(redisCommand(c, "MONITOR"));
  if (ok != nullptr) freeReplyObject(ok);
  timeval tv{0, 50 * 1000};
  redisSetTimeout(c, tv);
  const auto deadline = steady_clock::now() + window;
  while (steady_clock::now() < deadline) {
    void* raw = nullptr;
    if (redisGetReply(c, &raw) != REDIS_OK) {
      if (c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        c->err = 0;  // the read timed out: nothing happened
        continue;
      }
      break;
    }
    auto* r = static_cast<redisReply*>(raw);
    std::string line = Str(r);
    freeReplyObject(r);
    if (line.find(" lua] ") == std::string::npos) out.push_back(std::move(line));
  }
  redisFree(c);
  return out;
}

// The whole system should cost <= 20 Redis commands/s with 8 idle workers on 4 types and one
// batond. batond's share at rest: the reaper's check (one XINFO GROUPS per type: the pending
// counts, one round trip per second), the cron ticker's pass (TIME and HGETALL baton:cron: no job
// is defined) and a library check every 5 s. No function call at all: the promoter does not poll
// and the reaper calls baton_v2_reclaim only for a type with delivered tasks.
TEST_F(BatondTest, AnIdleBatondIsCheap) {
  for (const char* type : {"a", "b", "c", "d"}) RawEnqueue(redis_, "quiet", type, 1);
  RawEnqueue(redis_, "quiet", "a", 1, ServerMs() + 3600 * 1000);  // a far delayed task
  Batond batond(redis_.url(), dir_.path(), "b1");
  ASSERT_TRUE(batond.WaitRunning()) << batond.Log();
  std::this_thread::sleep_for(milliseconds(1500));
  const std::vector<std::string> commands = MonitorClientCommands(redis_.port(), seconds(5));
  std::size_t fcalls = 0;
  std::size_t lease_checks = 0;
  for (const std::string& c : commands) {
    fcalls += c.find("\"FCALL\"") != std::string::npos;
    lease_checks += c.find("\"XINFO\" \"GROUPS\"") != std::string::npos;
  }
  const double per_second = static_cast<double>(commands.size()) / 5;
  std::printf("idle batond: %.1f commands/s (%zu lease checks, %zu FCALLs in 5 s)\n", per_second,
              lease_checks, fcalls);
  EXPECT_LE(per_second, 9.0);
  EXPECT_EQ(fcalls, 0u);
  EXPECT_GE(lease_checks, 4u * 4);
  EXPECT_LE(lease_checks, 4u * 6);
}

}  // namespace
}  // namespace baton::e2e
