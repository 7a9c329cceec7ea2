// What workers cost Redis at rest, measured on the server: idle fetchers sleep in XREAD BLOCK, the
// maintenance (promote, reclaim) is off unless asked for, and when on it sleeps until the next due
// time instead of polling. Calls are counted on the server: SLOWLOG with threshold 0 logs every
// command a client sent with its arguments (each FCALL with its function name), INFO
// commandstats what Redis ran (the commands functions run inside included).
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include "worker/worker_test_util.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;

class WorkerIdleTest : public WorkerTest {
 protected:
  // Calls per command since CONFIG RESETSTAT ("fcall" -> n), from INFO commandstats.
  std::map<std::string, long long> CommandCalls() {
    std::map<std::string, long long> calls;
    std::istringstream info(redis_.String({"INFO", "commandstats"}));
    std::string line;
    while (std::getline(info, line)) {
      // cmdstat_fcall:calls=12,usec=...
      if (line.rfind("cmdstat_", 0) != 0) continue;
      std::string name = line.substr(8, line.find(':') - 8);
      std::size_t at = line.find("calls=");
      if (at == std::string::npos) continue;
      calls[name] = std::stoll(line.substr(at + 6));
    }
    return calls;
  }
  // Starts logging every command (with its arguments) from now on.
  void StartCommandLog() {
    redis_.Command({"CONFIG", "SET", "slowlog-log-slower-than", "0"});
    redis_.Command({"CONFIG", "SET", "slowlog-max-len", "100000"});
    redis_.Command({"SLOWLOG", "RESET"});
  }
  // Commands clients sent since StartCommandLog(), but the test's own (CONFIG, SLOWLOG, INFO) and
  // XREADGROUP (a blocked read that times out is not logged: see CommandCalls()): an FCALL under
  // its function's name, any other command under its name in lower case. The commands functions run
  // inside are logged too, with the client address "?:0": they are left out.
  std::map<std::string, int> SentCommands() {
    std::map<std::string, int> calls;
    auto log = redis_.Command({"SLOWLOG", "GET", "100000"});
    for (std::size_t i = 0; i < log->elements; ++i) {
      const redisReply* entry = log->element[i];
      const redisReply* argv = entry->element[3];
      if (argv->elements < 1 || std::string(entry->element[4]->str) == "?:0") continue;
      std::string command = argv->element[0]->str;
      for (char& c : command) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (command == "config" || command == "slowlog" || command == "info" ||
          command == "xreadgroup") {
        continue;
      }
      if ((command == "fcall" || command == "fcall_ro") && argv->elements > 1) {
        command = argv->element[1]->str;
      }
      ++calls[command];
    }
    return calls;
  }
};

TEST_F(WorkerIdleTest, EightIdleWorkersOnFourTypesCostAFewCommandsPerSecond) {
  // Two workers per type, default block (5 s), maintenance off (batond's job): every idle fetcher
  // costs one XREADGROUP BLOCK per 5 s, every worker one HMGET of the partition counts per 5 s
  // (docs/cluster.md, "Partitions"), and nothing else talks to Redis.
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < 8; ++i) {
    WorkerOptions o = Options();
    o.block = WorkerOptions().block;
    o.maintenance = false;
    ASSERT_EQ(o.block, 5000ms);
    workers.push_back(std::make_unique<Worker>(o));
    ASSERT_TRUE(
        workers.back()
            ->Register(kNs, "t" + std::to_string(i % 4), [](TaskContext&) { return Status::Ok(); })
            .ok());
  }
  for (auto& w : workers) ASSERT_TRUE(w->Start().ok());
  std::this_thread::sleep_for(500ms);  // past the first read of every fetcher

  StartCommandLog();
  redis_.Command({"CONFIG", "RESETSTAT"});
  std::this_thread::sleep_for(6s);
  // Commands the clients sent (SLOWLOG logs those, not the ones functions run inside).
  std::map<std::string, int> sent = SentCommands();
  // And what Redis ran, functions' inner commands included (INFO commandstats).
  std::map<std::string, long long> ran = CommandCalls();
  sent["xreadgroup"] = static_cast<int>(ran["xreadgroup"]);
  int total = 0;
  std::printf("8 idle workers, 4 types, 6 s; sent:");
  for (const auto& [name, n] : sent) {
    std::printf(" %s=%d", name.c_str(), n);
    total += n;
  }
  std::printf("; ran:");
  for (const auto& [name, n] : ran) std::printf(" %s=%lld", name.c_str(), n);
  std::printf("\n");
  // 8 fetchers, at most 2 blocking reads each in 6 s, and 8 workers, at most 2 partition reads
  // each: 32, i.e. under 6 per second.
  EXPECT_LE(sent["hmget"], 16);
  EXPECT_LE(total, 32);
  EXPECT_GE(sent["xreadgroup"], 8);
  EXPECT_EQ(sent.count("baton_v2_promote"), 0u);
  EXPECT_EQ(sent.count("baton_v2_reclaim"), 0u);
  for (const char* polled : {"xinfo", "xpending", "xautoclaim", "xclaim", "xlen"}) {
    EXPECT_EQ(ran.count(polled), 0u) << polled;
  }
  for (auto& w : workers) w->Stop();
}

TEST_F(WorkerIdleTest, MaintenanceOffNeverPromotesOrReclaims) {
  // A worker at work (successes, a failure that schedules a retry, a delayed task) with maintenance
  // off (the default) calls dequeue, ack and fail, never promote or reclaim: the retry and the
  // delayed task wait for batond.
  WorkerOptions o = Options();
  o.maintenance = WorkerOptions().maintenance;
  ASSERT_FALSE(o.maintenance);
  StartCommandLog();
  Worker worker(o);
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "job",
                      [](TaskContext& ctx) {
                        if (ctx.task().Payload().value("fail", false)) {
                          return Status::Internal("boom");
                        }
                        return Status::Ok();
                      },
                      FastRetry(2, 1000))
                  .ok());
  ASSERT_TRUE(worker.Start().ok());
  std::string ok = Enqueue("job", {{"fail", false}});
  std::string failing = Enqueue("job", {{"fail", true}});
  EnqueueOptions later;
  later.delay_seconds = 1;
  std::string delayed = Enqueue("job", {}, later);
  ASSERT_TRUE(WaitUntil([&] { return IsDone(ok) && worker.stats().failed == 1; }));
  std::this_thread::sleep_for(2500ms);  // past the retry's due time (50 ms) and the delay (1 s)
  EXPECT_EQ(redis_.Integer({"ZCARD", keys().Scheduled("job")}), 2);  // nobody promoted them
  EXPECT_FALSE(IsDone(delayed));
  worker.Stop();

  std::map<std::string, int> calls = SentCommands();
  EXPECT_GE(CommandCalls()["xreadgroup"], 1);
  EXPECT_GE(calls["baton_v2_start"], 1);
  EXPECT_GE(calls["baton_v2_ack"], 1);
  EXPECT_EQ(calls["baton_v2_fail"], 1);
  EXPECT_EQ(calls.count("baton_v2_promote"), 0u);
  EXPECT_EQ(calls.count("baton_v2_reclaim"), 0u);
}

TEST_F(WorkerIdleTest, MaintenanceSleepsUntilTheNextDueTimeInsteadOfPolling) {
  // With maintenance on and nothing scheduled or leased, promote and reclaim report no next due
  // time: the loop sleeps its longest sleep (1 s) between calls, never at 10 Hz.
  WorkerOptions o = Options();
  o.maintenance = true;
  StartCommandLog();
  Worker worker(o);
  ASSERT_TRUE(worker.Register(kNs, "quiet", [](TaskContext&) { return Status::Ok(); }).ok());
  ASSERT_TRUE(worker.Start().ok());
  std::this_thread::sleep_for(3500ms);
  std::map<std::string, int> calls = SentCommands();
  worker.Stop();
  std::printf("maintenance on, idle 3.5 s: %d promote, %d reclaim\n", calls["baton_v2_promote"],
              calls["baton_v2_reclaim"]);
  EXPECT_GE(calls["baton_v2_promote"], 2);  // it does run
  EXPECT_LE(calls["baton_v2_promote"], 5);  // the first pass, then one per second
  EXPECT_GE(calls["baton_v2_reclaim"], 2);
  EXPECT_LE(calls["baton_v2_reclaim"], 5);
}

TEST_F(WorkerIdleTest, MaintenanceWakesForARetryThisWorkerScheduled) {
  // A failure schedules a retry due 300-375 ms after it is recorded: the maintenance promotes it
  // then, without waiting out its 1 s sleep (the retry runs well before a 1 s poll could have
  // promoted it). Measured from when Redis recorded the failure (its at_ms), so that the time the
  // worker takes to build the failure (its stack trace) does not count.
  WorkerOptions o = Options();
  o.maintenance = true;
  std::atomic<int> runs{0};
  std::atomic<std::int64_t> second_ms{0};
  Worker worker(o);
  TypeOptions t = FastRetry(1, 1000);
  t.retry.base = 300ms;
  t.retry.max = 300ms;
  ASSERT_TRUE(worker
                  .Register(
                      kNs, "again",
                      [&](TaskContext&) {
                        if (++runs == 1) return Status::Internal("first run fails");
                        // The system clock: Redis' TIME (at_ms) reads it too, on this machine.
                        second_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count();
                        return Status::Ok();
                      },
                      t)
                  .ok());
  ASSERT_TRUE(worker.Start().ok());
  std::this_thread::sleep_for(1200ms);  // the maintenance is now in a full 1 s sleep
  std::string id = Enqueue("again", {});
  // Read while the retry waits (its success deletes the error history).
  nlohmann::json errors;
  ASSERT_TRUE(WaitUntil([&] {
    errors = Errors(id);
    return errors.size() == 1;
  }));
  ASSERT_TRUE(WaitUntil([&] { return IsDone(id); }, 5s));
  const std::int64_t gap = second_ms - errors[0]["at_ms"].get<std::int64_t>();
  std::printf("retry due after 300-375 ms ran %lld ms after the failure was recorded\n",
              static_cast<long long>(gap));
  EXPECT_GE(gap, 300);
  EXPECT_LT(gap, 700);
  worker.Stop();
}

}  // namespace
}  // namespace baton::testing
