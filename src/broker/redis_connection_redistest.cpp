// RedisConnection against a real redis-server.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "broker/redis_connection.h"
#include "harness/redis_server.h"

namespace baton::internal {
namespace {

using namespace std::chrono_literals;

RedisEndpoint Local(int port) {
  RedisEndpoint endpoint;
  endpoint.port = port;
  return endpoint;
}

std::unique_ptr<RedisConnection> OpenOrDie(const RedisEndpoint& endpoint,
                                           std::chrono::milliseconds timeout = 5000ms) {
  auto connection = RedisConnection::Open(endpoint, timeout);
  EXPECT_TRUE(connection.ok()) << connection.status().ToString();
  if (!connection.ok()) return nullptr;
  return std::move(connection).value();
}

TEST(RedisConnection, CommandsAndReplyTypes) {
  testing::RedisServer server;
  auto c = OpenOrDie(Local(server.port()));
  ASSERT_NE(c, nullptr);

  auto pong = c->Command({"PING"});
  ASSERT_TRUE(pong.ok());
  EXPECT_EQ(pong->type, Reply::Type::kStatus);
  EXPECT_EQ(pong->str, "PONG");

  const std::string binary("a\0b\r\nc", 6);
  ASSERT_TRUE(c->Command({"SET", "k", binary}).ok());
  auto value = c->Command({"GET", "k"});
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(value->type, Reply::Type::kString);
  EXPECT_EQ(value->str, binary);
  EXPECT_EQ(server.String({"GET", "k"}), binary);

  auto missing = c->Command({"GET", "nope"});
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing->is_nil());

  auto counter = c->Command({"INCRBY", "n", "41"});
  ASSERT_TRUE(counter.ok());
  EXPECT_EQ(counter->type, Reply::Type::kInteger);
  EXPECT_EQ(counter->integer, 41);

  ASSERT_TRUE(c->Command({"RPUSH", "l", "x", "y"}).ok());
  auto list = c->Command({"LRANGE", "l", "0", "-1"});
  ASSERT_TRUE(list.ok());
  ASSERT_TRUE(list->is_array());
  ASSERT_EQ(list->elements.size(), 2u);
  EXPECT_EQ(list->elements[1].str, "y");
  EXPECT_FALSE(c->broken());
}

TEST(RedisConnection, ErrorRepliesAreRepliesNotFailures) {
  testing::RedisServer server;
  auto c = OpenOrDie(Local(server.port()));
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Command({"SET", "s", "text"}).ok());
  auto reply = c->Command({"INCR", "s"});
  ASSERT_TRUE(reply.ok());
  EXPECT_TRUE(reply->is_error());
  EXPECT_NE(reply->str.find("not an integer"), std::string::npos);
  EXPECT_EQ(StatusFromErrorReply(*reply).code(), StatusCode::kInternal);
  // The connection is still good.
  EXPECT_FALSE(c->broken());
  EXPECT_EQ(c->Command({"GET", "s"})->str, "text");
}

TEST(RedisConnection, PipelineOfAThousand) {
  testing::RedisServer server;
  auto c = OpenOrDie(Local(server.port()));
  ASSERT_NE(c, nullptr);
  for (int i = 0; i < 1000; ++i) c->Append({"INCR", "counter"});
  c->Append({"HSET"});  // an error reply in the middle of a pipeline does not stop it
  c->Append({"GET", "counter"});
  EXPECT_EQ(c->pending(), 1002u);
  auto replies = c->Flush();
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  ASSERT_EQ(replies->size(), 1002u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ((*replies)[i].integer, i + 1);
  EXPECT_TRUE((*replies)[1000].is_error());
  EXPECT_EQ((*replies)[1001].str, "1000");
  EXPECT_EQ(c->pending(), 0u);
  auto empty = c->Flush();
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(RedisConnection, CommandWithUnflushedPipelineIsRefused) {
  testing::RedisServer server;
  auto c = OpenOrDie(Local(server.port()));
  ASSERT_NE(c, nullptr);
  c->Append({"INCR", "x"});
  EXPECT_EQ(c->Command({"PING"}).status().code(), StatusCode::kInternal);
  auto replies = c->Flush();
  ASSERT_TRUE(replies.ok());
  EXPECT_EQ(replies->at(0).integer, 1);
}

TEST(RedisConnection, SelectsTheDatabase) {
  testing::RedisServer server;
  RedisEndpoint endpoint = Local(server.port());
  endpoint.db = 3;
  auto c = OpenOrDie(endpoint);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Command({"SET", "where", "db3"}).ok());
  EXPECT_EQ(server.String({"GET", "where"}), "");
  server.Command({"SELECT", "3"});
  EXPECT_EQ(server.String({"GET", "where"}), "db3");
}

// The harness' helper connection stays authenticated when the password is set afterwards.
TEST(RedisConnection, AuthWithPasswordAndWithAclUser) {
  testing::RedisServer server;
  server.Command({"ACL", "SETUSER", "app", "on", ">app-pw", "~*", "&*", "+@all"});
  server.Command({"CONFIG", "SET", "requirepass", "s3cret"});

  RedisEndpoint endpoint = Local(server.port());
  auto refused = RedisConnection::Open(endpoint);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("NOAUTH"), std::string::npos)
      << refused.status().message();

  endpoint.password = "bad-pw-123";
  auto wrong = RedisConnection::Open(endpoint);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(wrong.status().message().find("AUTH failed"), std::string::npos);
  EXPECT_EQ(wrong.status().message().find("bad-pw-123"), std::string::npos);  // not echoed

  endpoint.password = "s3cret";
  auto c = OpenOrDie(endpoint);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->Command({"ACL", "WHOAMI"})->str, "default");

  auto parsed =
      RedisEndpoint::Parse("redis://app:app-pw@127.0.0.1:" + std::to_string(server.port()));
  ASSERT_TRUE(parsed.ok());
  auto user = OpenOrDie(*parsed);
  ASSERT_NE(user, nullptr);
  EXPECT_EQ(user->Command({"ACL", "WHOAMI"})->str, "app");
}

TEST(RedisConnection, ConnectRefusedIsUnavailable) {
  const int port = testing::FreeLoopbackPort();
  auto c = RedisConnection::Open(Local(port), 1000ms);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(c.status().message().find(std::to_string(port)), std::string::npos);
}

TEST(RedisConnection, KilledServerMakesTheConnectionUnavailable) {
  testing::RedisServer server;
  auto c = OpenOrDie(Local(server.port()));
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Command({"PING"}).ok());
  server.Kill();
  auto reply = c->Command({"PING"});
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(c->broken());
  // Every later call fails fast, pipelines included, until Reconnect().
  EXPECT_EQ(c->Command({"PING"}).status().code(), StatusCode::kUnavailable);
  c->Append({"PING"});
  EXPECT_EQ(c->Flush().status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(c->pending(), 0u);
  EXPECT_EQ(c->Reconnect().code(), StatusCode::kUnavailable);
}

TEST(RedisConnection, BlockingCommandWaitsPastTheRegularTimeout) {
  testing::RedisServer server;
  auto c = OpenOrDie(Local(server.port()), 300ms);
  ASSERT_NE(c, nullptr);
  const auto start = std::chrono::steady_clock::now();
  auto reply = c->BlockingCommand({"XREAD", "BLOCK", "800", "STREAMS", "s", "$"}, 800ms);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_TRUE(reply->is_nil());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 700ms);
  EXPECT_FALSE(c->broken());
  // The regular timeout is back: a command that blocks longer than it breaks the connection.
  auto timed_out = c->Command({"BLPOP", "nothing", "3"});
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(timed_out.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(timed_out.status().message().find("timed out"), std::string::npos)
      << timed_out.status().message();
  EXPECT_TRUE(c->broken());
  ASSERT_TRUE(c->Reconnect().ok());
  EXPECT_FALSE(c->broken());
  EXPECT_EQ(c->Command({"PING"})->str, "PONG");
}

}  // namespace
}  // namespace baton::internal
