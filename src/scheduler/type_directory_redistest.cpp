// The directory of served types against a real redis-server: registered namespaces, namespaces
// nobody registered (found by SCAN, then registered), pairs added by the messages the functions
// publish, and the namespace filter.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "broker/keys.h"
#include "harness/redis_server.h"
#include "scheduler/scheduler_test_util.h"
#include "scheduler/type_directory.h"
#include "scheduler/wakeup_subscriber.h"

namespace baton::internal {
namespace {

using namespace std::chrono_literals;
using baton::testing::RedisServer;
using testutil::RawEnqueue;

class TypeDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    redis_.LoadFunctions();
    auto endpoint = RedisEndpoint::Parse(redis_.url());
    ASSERT_TRUE(endpoint.ok());
    auto conn = RedisConnection::Open(*endpoint);
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    conn_ = std::move(*conn);
  }

  bool Registered(const std::string& ns) {
    return redis_.Integer({"SISMEMBER", std::string(Keys::kNamespaces), ns}) == 1;
  }

  RedisServer redis_;
  std::unique_ptr<RedisConnection> conn_;
};

TEST_F(TypeDirectoryTest, ReadsTheTypesOfRegisteredNamespaces) {
  RawEnqueue(redis_, "known", "a", 1);
  RawEnqueue(redis_, "known", "b", 1);
  redis_.Command({"SADD", std::string(Keys::kNamespaces), "known"});
  TypeDirectory dir;
  auto added = dir.Refresh(*conn_, /*scan=*/false);
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  EXPECT_EQ(*added, (std::vector<TypeRef>{{"known", "a"}, {"known", "b"}}));
  EXPECT_EQ(dir.Snapshot(), *added);
  auto again = dir.Refresh(*conn_, false);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());  // nothing new
}

TEST_F(TypeDirectoryTest, ScanFindsAndRegistersANamespaceNobodyRegistered) {
  RawEnqueue(redis_, "ghost", "mail", 1, /*run_at_ms=*/testutil::ServerMs(redis_) + 60000);
  ASSERT_FALSE(Registered("ghost"));
  // Unrelated keys that look a little like a types set are not namespaces.
  redis_.Command({"SADD", "baton:v2:{ghost}:unique:x}:types", "m"});
  redis_.Command({"SET", "baton:v2:{str}:types", "not a set"});
  TypeDirectory dir;
  auto without_scan = dir.Refresh(*conn_, false);
  ASSERT_TRUE(without_scan.ok());
  EXPECT_TRUE(without_scan->empty());

  auto scanned = dir.Refresh(*conn_, /*scan=*/true);
  ASSERT_TRUE(scanned.ok()) << scanned.status().ToString();
  EXPECT_EQ(*scanned, (std::vector<TypeRef>{{"ghost", "mail"}}));
  EXPECT_TRUE(Registered("ghost"));  // the CLI sees it now
  EXPECT_FALSE(Registered("str"));
  // Known from now on, with or without a scan.
  auto later = dir.Refresh(*conn_, false);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(dir.Snapshot(), (std::vector<TypeRef>{{"ghost", "mail"}}));
}

TEST_F(TypeDirectoryTest, ScanWalksAKeyspaceLargerThanOneScanCall) {
  for (int i = 0; i < 3000; ++i) redis_.Command({"SET", "filler:" + std::to_string(i), "x"});
  RawEnqueue(redis_, "needle", "t", 1);
  auto found = ScanNamespaces(*conn_, /*count=*/100);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, std::vector<std::string>{"needle"});
}

TEST_F(TypeDirectoryTest, MessagesAddPairsAndNewNamespacesAreSynced) {
  RawEnqueue(redis_, "fresh", "one", 1);
  RawEnqueue(redis_, "fresh", "two", 1);
  TypeDirectory dir;
  EXPECT_TRUE(dir.Add({"fresh", "one"}));
  EXPECT_FALSE(dir.Add({"fresh", "one"}));
  EXPECT_TRUE(dir.HasNewNamespaces());
  auto synced = dir.SyncNewNamespaces(*conn_);
  ASSERT_TRUE(synced.ok()) << synced.status().ToString();
  EXPECT_EQ(*synced, (std::vector<TypeRef>{{"fresh", "two"}}));  // its other type
  EXPECT_FALSE(dir.HasNewNamespaces());
  EXPECT_TRUE(Registered("fresh"));
  EXPECT_EQ(dir.Snapshot(), (std::vector<TypeRef>{{"fresh", "one"}, {"fresh", "two"}}));
  // Another type of a namespace already synced needs no sync.
  EXPECT_TRUE(dir.Add({"fresh", "three"}));
  EXPECT_FALSE(dir.HasNewNamespaces());
}

TEST_F(TypeDirectoryTest, ConfiguredNamespacesOnly) {
  RawEnqueue(redis_, "mine", "t", 1);
  RawEnqueue(redis_, "theirs", "t", 1);
  redis_.Command({"SADD", std::string(Keys::kNamespaces), "theirs"});
  TypeDirectory dir({"mine"});
  EXPECT_TRUE(dir.Serves("mine"));
  EXPECT_FALSE(dir.Serves("theirs"));
  EXPECT_FALSE(dir.Add({"theirs", "other"}));
  auto added = dir.Refresh(*conn_, /*scan=*/true);
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  EXPECT_EQ(dir.Snapshot(), (std::vector<TypeRef>{{"mine", "t"}}));
  EXPECT_TRUE(Registered("mine"));
}

TEST_F(TypeDirectoryTest, DropsPairsRedisNoLongerLists) {
  RawEnqueue(redis_, "gone", "t", 1);
  TypeDirectory dir;
  ASSERT_TRUE(dir.Refresh(*conn_, true).ok());
  ASSERT_EQ(dir.Snapshot().size(), 1u);
  redis_.Command({"FLUSHALL"});
  ASSERT_TRUE(dir.Refresh(*conn_, false).ok());
  EXPECT_TRUE(dir.Snapshot().empty());
}

TEST(TypesKeyTest, NamespaceOfTypesKey) {
  EXPECT_EQ(NamespaceOfTypesKey("baton:v2:{orders}:types"), "orders");
  EXPECT_EQ(NamespaceOfTypesKey("baton:v2:{a}:unique:x}:types"), std::nullopt);
  EXPECT_EQ(NamespaceOfTypesKey("baton:v2:{}:types"), std::nullopt);
  EXPECT_EQ(NamespaceOfTypesKey("baton:{orders}:types"), std::nullopt);
  EXPECT_EQ(NamespaceOfTypesKey("baton:v2:{orders}:tasks"), std::nullopt);
}

TEST(MessageTest, Parses) {
  WakeupMessage m;
  ASSERT_TRUE(ParseWakeupMessage("ns|type|1722489600123", &m));
  EXPECT_EQ(m.ns, "ns");
  EXPECT_EQ(m.type, "type");
  EXPECT_EQ(m.due_ms, 1722489600123);
  EXPECT_FALSE(ParseWakeupMessage("ns|type|", &m));
  EXPECT_FALSE(ParseWakeupMessage("ns|type|12x", &m));
  EXPECT_FALSE(ParseWakeupMessage("ns|12", &m));
  EXPECT_FALSE(ParseWakeupMessage("|t|12", &m));
  EXPECT_FALSE(ParseWakeupMessage("n s|t|12", &m));
  TypeRef t;
  ASSERT_TRUE(ParseTypeMessage("orders|mail", &t));
  EXPECT_EQ(t, (TypeRef{"orders", "mail"}));
  EXPECT_FALSE(ParseTypeMessage("orders", &t));
  EXPECT_FALSE(ParseTypeMessage("orders|", &t));
  EXPECT_FALSE(ParseTypeMessage("orders|a|b", &t));
}

// The functions announce a type new to its namespace on baton:v2:types, and a new earliest
// scheduled task on baton:v2:wakeup; the subscriber hands both over.
TEST_F(TypeDirectoryTest, SubscriberDeliversTypeAndWakeupMessages) {
  std::mutex mu;
  std::vector<TypeRef> types;
  std::vector<WakeupMessage> wakeups;
  WakeupSubscriber::Handlers h;
  h.on_type = [&](const TypeRef& t) {
    std::lock_guard<std::mutex> lock(mu);
    types.push_back(t);
  };
  h.on_wakeup = [&](const WakeupMessage& m) {
    std::lock_guard<std::mutex> lock(mu);
    wakeups.push_back(m);
  };
  auto endpoint = RedisEndpoint::Parse(redis_.url());
  WakeupSubscriber sub(*endpoint, h);
  ASSERT_TRUE(sub.Start().ok());
  const std::int64_t due = testutil::ServerMs(redis_) + 60000;
  RawEnqueue(redis_, "pubns", "later", 1, due);
  RawEnqueue(redis_, "pubns", "later", 1, due + 1000);  // not earliest: no wake-up; type known
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!types.empty() && !wakeups.empty()) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  std::this_thread::sleep_for(100ms);
  sub.Stop();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(types, (std::vector<TypeRef>{{"pubns", "later"}}));
  ASSERT_EQ(wakeups.size(), 1u);
  EXPECT_EQ(wakeups[0].ns, "pubns");
  EXPECT_EQ(wakeups[0].type, "later");
  EXPECT_EQ(wakeups[0].due_ms, due);
}

}  // namespace
}  // namespace baton::internal
