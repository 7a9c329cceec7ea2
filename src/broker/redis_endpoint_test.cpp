#include <gtest/gtest.h>

#include "broker/redis_connection.h"

namespace baton::internal {
namespace {

TEST(RedisEndpoint, HostPortAndDefaults) {
  auto e = RedisEndpoint::Parse("redis://cache.local");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->host, "cache.local");
  EXPECT_EQ(e->port, 6379);
  EXPECT_EQ(e->db, 0);
  EXPECT_TRUE(e->password.empty());

  e = RedisEndpoint::Parse("redis://10.0.0.5:7000/3");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->host, "10.0.0.5");
  EXPECT_EQ(e->port, 7000);
  EXPECT_EQ(e->db, 3);
}

TEST(RedisEndpoint, UserAndPassword) {
  auto e = RedisEndpoint::Parse("redis://app:s%40cret%3A1@h:1234");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->username, "app");
  EXPECT_EQ(e->password, "s@cret:1");
  EXPECT_EQ(e->host, "h");
  EXPECT_EQ(e->port, 1234);

  e = RedisEndpoint::Parse("redis://:pw@h");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->username, "");
  EXPECT_EQ(e->password, "pw");
}

TEST(RedisEndpoint, Ipv6AndUnixSocket) {
  auto e = RedisEndpoint::Parse("redis://[::1]:6380");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->port, 6380);

  e = RedisEndpoint::Parse("unix:///run/redis/redis.sock?db=2&password=p%20w");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->unix_socket, "/run/redis/redis.sock");
  EXPECT_EQ(e->db, 2);
  EXPECT_EQ(e->password, "p w");
}

TEST(RedisEndpoint, ErrorsNameTheUrlAndNeverThePassword) {
  for (const char* url : {"http://h", "redis://", "redis://h:0", "redis://h:99999", "redis://h:x",
                          "redis://h/db", "redis://[::1", "unix://relative.sock",
                          "unix:///s?nope=1", "redis://u:secret%zz@h", "rediss://h"}) {
    SCOPED_TRACE(url);
    auto e = RedisEndpoint::Parse(url);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(e.status().message().rfind("redis_url: ", 0), 0u) << e.status().message();
    EXPECT_EQ(e.status().message().find("secret"), std::string::npos);
  }
}

TEST(RedisEndpoint, ClusterSeeds) {
  auto e = RedisEndpoint::Parse("redis+cluster://app:s%40c@10.0.0.1:7000,10.0.0.2,[::1]:7002");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_TRUE(e->cluster());
  ASSERT_EQ(e->cluster_seeds.size(), 3u);
  EXPECT_EQ(e->cluster_seeds[0], (RedisSeed{"10.0.0.1", 7000}));
  EXPECT_EQ(e->cluster_seeds[1], (RedisSeed{"10.0.0.2", 6379}));
  EXPECT_EQ(e->cluster_seeds[2], (RedisSeed{"::1", 7002}));
  EXPECT_EQ(e->host, "10.0.0.1");
  EXPECT_EQ(e->port, 7000);
  EXPECT_EQ(e->username, "app");
  EXPECT_EQ(e->password, "s@c");
  const RedisEndpoint node = e->Node("10.0.0.5", 7005);
  EXPECT_FALSE(node.cluster());
  EXPECT_EQ(node.password, "s@c");
  EXPECT_EQ(node.port, 7005);
  EXPECT_FALSE(RedisEndpoint::Parse("redis://h:1").value().cluster());
}

TEST(RedisEndpoint, BadClusterUrlsNameTheRule) {
  auto error = [](const std::string& url) {
    auto e = RedisEndpoint::Parse(url);
    EXPECT_FALSE(e.ok()) << url;
    return e.ok() ? std::string() : e.status().message();
  };
  EXPECT_EQ(error("redis+cluster://h:1,h:2/0"),
            "redis_url: redis+cluster:// takes no /db (a cluster has only db 0)");
  EXPECT_EQ(error("redis+cluster://h:1,,h:2"),
            "redis_url: seed 2: missing host (redis://host[:port][/db]) "
            "(redis+cluster://host:port[,host:port...])");
  EXPECT_NE(error("redis+cluster://h:1,h:99999").find("seed 2: port must be 1..65535"),
            std::string::npos);
  EXPECT_NE(error("redis+cluster://").find("seed 1: missing host"), std::string::npos);
  EXPECT_NE(error("rediss+cluster://h:1").find("must start with"), std::string::npos);
  // The password never appears in an error.
  EXPECT_EQ(error("redis+cluster://u:hunter2@h:1,h:x").find("hunter2"), std::string::npos);
}

TEST(RedisReply, Accessors) {
  Reply s{Reply::Type::kString, "42", 0, {}};
  EXPECT_EQ(s.AsString(), "42");
  EXPECT_EQ(s.AsInteger(), 42);
  Reply i{Reply::Type::kInteger, "", 7, {}};
  EXPECT_EQ(i.AsString(), "7");
  EXPECT_EQ(i.AsInteger(), 7);
  Reply text{Reply::Type::kString, "4x", 0, {}};
  EXPECT_EQ(text.AsInteger(), 0);
  Reply nil;
  EXPECT_TRUE(nil.is_nil());
  EXPECT_EQ(nil.AsString(), "");
}

TEST(RedisReply, StatusFromErrorReply) {
  auto status = [](const std::string& text) {
    return StatusFromErrorReply(Reply{Reply::Type::kError, text, 0, {}});
  };
  Status s = status("BATON_INVALID max_retry: must be an integer 0..25");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "max_retry: must be an integer 0..25");
  s = status("BATON_NOT_FOUND task t-1");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "task t-1");
  s = status("BATON_CONFLICT task t-1 is active");
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  // A plain Lua error carries a prefix added by Redis.
  s = status("ERR user_function:12: BATON_CONFLICT task t-1 is dead");
  EXPECT_EQ(s.code(), StatusCode::kConflict);
  EXPECT_EQ(s.message(), "task t-1 is dead");
  s = status("WRONGTYPE Operation against a key holding the wrong kind of value");
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("WRONGTYPE"), std::string::npos);
  EXPECT_EQ(status("BATON_INVALIDX y").code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace baton::internal
