// The subscribe-mode connection (broker/subscription.h) against a real redis-server: messages of
// every subscribed channel in order, timeouts, authentication, and a server that dies.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "broker/subscription.h"
#include "harness/redis_server.h"

namespace baton::internal {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

RedisEndpoint Local(int port) {
  RedisEndpoint endpoint;
  endpoint.port = port;
  endpoint.timeout = 2000ms;
  return endpoint;
}

// Waits up to 2 s until `n` messages arrived (or the subscription failed).
std::vector<PubSubMessage> Collect(Subscription& sub, std::size_t n) {
  std::vector<PubSubMessage> all;
  const auto deadline = Clock::now() + 2s;
  while (all.size() < n && Clock::now() < deadline) {
    auto got = sub.Wait(100ms);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!got.ok()) break;
    all.insert(all.end(), got->begin(), got->end());
  }
  return all;
}

TEST(Subscription, DeliversTheMessagesOfEverySubscribedChannelInOrder) {
  testing::RedisServer server;
  auto sub = Subscription::Open(Local(server.port()), {"chan:a", "chan:b"});
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  // Subscribed when Open returned: both are received, the other channel's message is not.
  EXPECT_EQ(server.Integer({"PUBLISH", "chan:a", "one"}), 1);
  EXPECT_EQ(server.Integer({"PUBLISH", "chan:other", "x"}), 0);
  EXPECT_EQ(server.Integer({"PUBLISH", "chan:b", std::string("t\0wo", 4)}), 1);
  EXPECT_EQ(server.Integer({"PUBLISH", "chan:a", "three"}), 1);
  std::vector<PubSubMessage> got = Collect(**sub, 3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].channel, "chan:a");
  EXPECT_EQ(got[0].payload, "one");
  EXPECT_EQ(got[1].channel, "chan:b");
  EXPECT_EQ(got[1].payload, std::string("t\0wo", 4));  // binary-safe
  EXPECT_EQ(got[2].payload, "three");
}

TEST(Subscription, WaitReturnsNothingAfterItsTimeout) {
  testing::RedisServer server;
  auto sub = Subscription::Open(Local(server.port()), {"quiet"});
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  const auto start = Clock::now();
  auto got = (*sub)->Wait(150ms);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->empty());
  EXPECT_GE(Clock::now() - start, 140ms);
  auto now = (*sub)->ReadAvailable();  // never blocks
  ASSERT_TRUE(now.ok());
  EXPECT_TRUE(now->empty());
}

TEST(Subscription, AuthenticatesAndSaysWhyWhenItCannot) {
  testing::RedisServer server;
  server.Command({"CONFIG", "SET", "requirepass", "s3cret"});
  RedisEndpoint endpoint = Local(server.port());
  auto refused = Subscription::Open(endpoint, {"c"});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("NOAUTH"), std::string::npos)
      << refused.status().message();

  endpoint.password = "wrong-pw-42";
  auto wrong = Subscription::Open(endpoint, {"c"});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("subscribe: AUTH"), std::string::npos)
      << wrong.status().message();
  EXPECT_EQ(wrong.status().message().find("wrong-pw-42"), std::string::npos);  // not echoed

  endpoint.password = "s3cret";
  auto sub = Subscription::Open(endpoint, {"c"});
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  server.Command({"PUBLISH", "c", "hello"});
  std::vector<PubSubMessage> got = Collect(**sub, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].payload, "hello");
}

TEST(Subscription, ConnectRefusedIsUnavailable) {
  auto sub = Subscription::Open(Local(testing::FreeLoopbackPort()), {"c"});
  ASSERT_FALSE(sub.ok());
  EXPECT_EQ(sub.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(sub.status().message().find("subscribe: connect"), std::string::npos)
      << sub.status().message();
}

TEST(Subscription, AServerThatDiesMakesWaitUnavailableAtOnce) {
  testing::RedisServer server;
  auto sub = Subscription::Open(Local(server.port()), {"c"});
  ASSERT_TRUE(sub.ok()) << sub.status().ToString();
  server.Kill();
  const auto start = Clock::now();
  auto got = (*sub)->Wait(2000ms);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(got.status().message().find("connection lost"), std::string::npos)
      << got.status().message();
  EXPECT_LT(Clock::now() - start, 1000ms) << "waited for the timeout instead of seeing the close";
}

}  // namespace
}  // namespace baton::internal
