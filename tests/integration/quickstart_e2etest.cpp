// The quick start of docs/getting-started-cpp.md, run as a user would: the two example programs
// (examples/quickstart_*.cpp, the very files the doc shows) against a real redis-server. The worker
// runs the task the producer enqueued, with the payload intact, and stops cleanly on SIGTERM.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "broker/keys.h"
#include "harness/process.h"
#include "harness/redis_server.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;

TEST(QuickstartTest, ProducerAndWorkerOfTheDocRunATask) {
  RedisServer redis;
  redis.LoadFunctions();
  TempDir dir;
  const std::string worker_log = dir.path() + "/worker.log";
  Process worker({BATON_QUICKSTART_WORKER, redis.url()}, worker_log);

  const std::string producer_log = dir.path() + "/producer.log";
  Process producer({BATON_QUICKSTART_PRODUCER, redis.url()}, producer_log);
  ASSERT_EQ(producer.Wait(30s), 0) << ReadFile(producer_log);
  const std::string out = ReadFile(producer_log);
  ASSERT_EQ(out.rfind("enqueued ", 0), 0u) << out;
  const std::string id = out.substr(9, out.find('\n') - 9);

  const std::string want = R"(sending {"template":"welcome","to":"ada@example.com"} (attempt 1))";
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (ReadFile(worker_log).find(want) == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(ReadFile(worker_log).find(want), std::string::npos) << ReadFile(worker_log);
  // Done: the id is in the namespace's final states and no longer live.
  const internal::Keys keys("shop");
  const auto deadline_done = std::chrono::steady_clock::now() + 10s;
  while (redis.Command({"ZSCORE", keys.Done(), id})->type == REDIS_REPLY_NIL &&
         std::chrono::steady_clock::now() < deadline_done) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(redis.Command({"ZSCORE", keys.Done(), id})->type, REDIS_REPLY_NIL);
  EXPECT_EQ(redis.Integer({"HEXISTS", keys.Tasks(), id}), 0);

  worker.Signal(SIGTERM);
  EXPECT_EQ(worker.Wait(30s), 0) << ReadFile(worker_log);
}

TEST(QuickstartTest, ExamplesAnswerHelpWithTheirNamespaceAndType) {
  TempDir dir;
  for (const char* binary : {BATON_QUICKSTART_PRODUCER, BATON_QUICKSTART_WORKER}) {
    const std::string log = dir.path() + "/help.log";
    Process p({binary, "--help"}, log);
    ASSERT_EQ(p.Wait(10s), 0);
    const std::string text = ReadFile(log);
    EXPECT_NE(text.find("namespace shop, type send_email"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace baton::testing
