#include "broker/cluster_topology.h"

#include <gtest/gtest.h>

namespace baton::internal {
namespace {

Reply Str(std::string s) {
  Reply r;
  r.type = Reply::Type::kString;
  r.str = std::move(s);
  return r;
}
Reply Int(long long v) {
  Reply r;
  r.type = Reply::Type::kInteger;
  r.integer = v;
  return r;
}
Reply Arr(std::vector<Reply> elements) {
  Reply r;
  r.type = Reply::Type::kArray;
  r.elements = std::move(elements);
  return r;
}
Reply Node(const std::string& endpoint, long long port, const std::string& role) {
  return Arr({Str("id"), Str("abc"), Str("port"), Int(port), Str("ip"), Str("10.0.0.9"),
              Str("endpoint"), Str(endpoint), Str("role"), Str(role), Str("health"),
              Str("online")});
}

const NodeAddress kAsked{"127.0.0.1", 7000};

TEST(SlotMap, FromClusterShardsKeepsThePrimaryOfEachShard) {
  Reply shards = Arr({
      Arr({Str("slots"), Arr({Int(0), Int(5460)}), Str("nodes"),
           Arr({Node("127.0.0.1", 7003, "replica"), Node("127.0.0.1", 7000, "master")})}),
      Arr({Str("slots"), Arr({Int(5461), Int(10922), Int(16000), Int(16383)}), Str("nodes"),
           Arr({Node("127.0.0.1", 7001, "master")})}),
      Arr({Str("slots"), Arr({Int(10923), Int(15999)}), Str("nodes"),
           Arr({Node("?", 7002, "master")})}),  // no endpoint announced: its ip
  });
  StatusOr<SlotMap> map = SlotMapFromShards(shards, kAsked);
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  EXPECT_EQ(map->unserved(), 0);
  ASSERT_EQ(map->primaries().size(), 3u);
  EXPECT_EQ(map->Owner(0)->ToString(), "127.0.0.1:7000");
  EXPECT_EQ(map->Owner(5460)->ToString(), "127.0.0.1:7000");
  EXPECT_EQ(map->Owner(5461)->ToString(), "127.0.0.1:7001");
  EXPECT_EQ(map->Owner(16383)->ToString(), "127.0.0.1:7001");
  EXPECT_EQ(map->Owner(12000)->ToString(), "10.0.0.9:7002");
  EXPECT_EQ(map->Owner(16384), nullptr);
}

TEST(SlotMap, AShardWithoutAPrimaryLeavesItsSlotsUnserved) {
  Reply shards = Arr({Arr({Str("slots"), Arr({Int(0), Int(99)}), Str("nodes"),
                           Arr({Node("127.0.0.1", 7003, "replica")})})});
  StatusOr<SlotMap> map = SlotMapFromShards(shards, kAsked);
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(map->Owner(5), nullptr);
  EXPECT_EQ(map->unserved(), kClusterSlots);
}

TEST(SlotMap, MalformedShardsAreInternalErrorsNamingTheCommand) {
  for (const Reply& bad :
       {Str("x"), Arr({Str("x")}),
        Arr({Arr({Str("slots"), Arr({Int(0)}), Str("nodes"), Arr({Node("h", 1, "master")})})}),
        Arr({Arr(
            {Str("slots"), Arr({Int(5), Int(2)}), Str("nodes"), Arr({Node("h", 1, "master")})})}),
        Arr({Arr({Str("slots"), Arr({Int(0), Int(16384)}), Str("nodes"),
                  Arr({Node("h", 1, "master")})})}),
        Arr({Arr({Str("slots"), Arr({Int(0), Int(1)}), Str("nodes"),
                  Arr({Node("h", 0, "master")})})})}) {
    StatusOr<SlotMap> map = SlotMapFromShards(bad, kAsked);
    ASSERT_FALSE(map.ok());
    EXPECT_EQ(map.status().code(), StatusCode::kInternal);
    EXPECT_NE(map.status().message().find("CLUSTER SHARDS: malformed reply"), std::string::npos)
        << map.status().message();
  }
}

TEST(SlotMap, FromClusterSlotsUsesTheAskedHostForAnEmptyOne) {
  Reply slots = Arr({
      Arr({Int(0), Int(8191), Arr({Str(""), Int(7000), Str("id1")}),
           Arr({Str("127.0.0.1"), Int(7003)})}),
      Arr({Int(8192), Int(16383), Arr({Str("127.0.0.2"), Int(7001), Str("id2")})}),
  });
  StatusOr<SlotMap> map = SlotMapFromSlots(slots, kAsked);
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  EXPECT_EQ(map->Owner(100)->ToString(), "127.0.0.1:7000");
  EXPECT_EQ(map->Owner(9000)->ToString(), "127.0.0.2:7001");
  EXPECT_EQ(map->unserved(), 0);
  EXPECT_FALSE(SlotMapFromSlots(Arr({Arr({Int(0), Int(1)})}), kAsked).ok());
}

TEST(NodeAddress, ParsesWhatMovedRepliesName) {
  EXPECT_EQ(ParseNodeAddress("127.0.0.1:6381")->ToString(), "127.0.0.1:6381");
  auto v6 = ParseNodeAddress("[::1]:7000");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->ToString(), "[::1]:7000");
  EXPECT_FALSE(ParseNodeAddress("nohost").ok());
  EXPECT_FALSE(ParseNodeAddress("h:0").ok());
  EXPECT_FALSE(ParseNodeAddress("h:70000").ok());
  EXPECT_FALSE(ParseNodeAddress(":7000").ok());
}

}  // namespace
}  // namespace baton::internal
