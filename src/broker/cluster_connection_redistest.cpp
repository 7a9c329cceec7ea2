// RedisConnection on a real Redis Cluster (redis-cli --cluster create on loopback ports): slot
// routing, pipelines split over nodes, MOVED and ASK, per-node commands, the functions library on
// every primary, and a primary killed mid-way.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "broker/function_library.h"
#include "broker/key_scan.h"
#include "broker/redis_connection.h"
#include "harness/redis_cluster.h"

namespace baton::internal {
namespace {

std::unique_ptr<RedisConnection> OpenUrl(const std::string& url) {
  auto endpoint = RedisEndpoint::Parse(url);
  EXPECT_TRUE(endpoint.ok()) << endpoint.status().ToString();
  auto connection = RedisConnection::Open(*endpoint);
  EXPECT_TRUE(connection.ok()) << connection.status().ToString();
  return connection.ok() ? std::move(connection).value() : nullptr;
}

// Keys whose primaries cover every primary of `cluster` (a {tag} per key).
std::vector<std::string> KeysOnEveryPrimary(testing::RedisCluster& cluster) {
  std::vector<std::string> keys;
  std::set<int> covered;
  for (int i = 0; covered.size() < cluster.Primaries().size() && i < 1000; ++i) {
    const std::string key = "k:{" + std::to_string(i) + "}";
    if (covered.insert(cluster.PrimaryFor(key)).second) keys.push_back(key);
  }
  return keys;
}

std::string NodeId(testing::RedisServer& node) { return node.String({"CLUSTER", "MYID"}); }

// Hands `slot` to primary `to`: SETSLOT NODE on every primary, the new owner first.
void GiveSlot(testing::RedisCluster& cluster, const std::string& slot, int to) {
  const std::string to_id = NodeId(cluster.node(to));
  cluster.node(to).Command({"CLUSTER", "SETSLOT", slot, "NODE", to_id});
  for (int p : cluster.Primaries()) {
    if (p != to) cluster.node(p).Command({"CLUSTER", "SETSLOT", slot, "NODE", to_id});
  }
}

class ClusterConnectionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new testing::RedisCluster(3, 0); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  static testing::RedisCluster* cluster_;
};
testing::RedisCluster* ClusterConnectionTest::cluster_ = nullptr;

TEST_F(ClusterConnectionTest, APipelineOverEveryPrimaryKeepsItsOrderAndItsNodes) {
  auto conn = OpenUrl(cluster_->url());
  ASSERT_NE(conn, nullptr);
  EXPECT_TRUE(conn->cluster());
  EXPECT_EQ(conn->Nodes().size(), 3u);
  const std::vector<std::string> keys = KeysOnEveryPrimary(*cluster_);
  ASSERT_EQ(keys.size(), 3u);
  for (const std::string& key : keys) conn->Append({"SET", key, "v" + key});
  for (const std::string& key : keys) conn->Append({"GET", key});
  auto replies = conn->Flush();
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  ASSERT_EQ(replies->size(), 6u);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ((*replies)[i].str, "OK");
    EXPECT_EQ((*replies)[3 + i].str, "v" + keys[i]);
    // Stored on the primary that serves the key, not anywhere else.
    EXPECT_EQ(cluster_->node(cluster_->PrimaryFor(keys[i])).String({"GET", keys[i]}),
              "v" + keys[i]);
  }
  // A transaction and the keyless commands after a key stay on that key's node.
  conn->Append({"MULTI"});
  conn->Append({"INCR", keys[1] + ":n"});
  conn->Append({"INCR", keys[1] + ":n"});
  conn->Append({"EXEC"});
  conn->Append({"TIME"});
  replies = conn->Flush();
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  ASSERT_EQ(replies->size(), 5u);
  ASSERT_TRUE((*replies)[3].is_array()) << (*replies)[3].str;
  EXPECT_EQ((*replies)[3].elements[1].integer, 2);
  EXPECT_TRUE((*replies)[4].is_array());
}

TEST_F(ClusterConnectionTest, FollowsASlotThatMovedToAnotherPrimary) {
  auto conn = OpenUrl(cluster_->url());
  ASSERT_NE(conn, nullptr);
  const std::string key = "moving:{m1}";
  const int from = cluster_->PrimaryFor(key);
  int to = -1;
  for (int p : cluster_->Primaries()) {
    if (p != from) to = p;
  }
  ASSERT_GE(to, 0);
  ASSERT_TRUE(conn->Command({"GET", key}).ok());  // the connection knows the old owner
  const std::string slot =
      std::to_string(cluster_->node(from).Integer({"CLUSTER", "KEYSLOT", key}));
  GiveSlot(*cluster_, slot, to);  // an empty slot moves at once
  auto reply = conn->Command({"SET", key, "after-move"});
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->str, "OK");
  EXPECT_EQ(cluster_->node(to).String({"GET", key}), "after-move");
  EXPECT_EQ(cluster_->PrimaryFor(key), to);
}

TEST_F(ClusterConnectionTest, FollowsAskWhileASlotIsMigrating) {
  auto conn = OpenUrl(cluster_->url());
  ASSERT_NE(conn, nullptr);
  const std::string key = "migrating:{a7}";
  const int from = cluster_->PrimaryFor(key);
  int to = -1;
  for (int p : cluster_->Primaries()) {
    if (p != from) to = p;
  }
  const std::string slot =
      std::to_string(cluster_->node(from).Integer({"CLUSTER", "KEYSLOT", key}));
  cluster_->node(to).Command(
      {"CLUSTER", "SETSLOT", slot, "IMPORTING", NodeId(cluster_->node(from))});
  cluster_->node(from).Command(
      {"CLUSTER", "SETSLOT", slot, "MIGRATING", NodeId(cluster_->node(to))});
  // The key is not on the old owner: it answers ASK, and the write goes to the new one.
  auto reply = conn->Command({"SET", key, "asked"});
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->str, "OK");
  cluster_->node(to).Command({"ASKING"});
  EXPECT_EQ(cluster_->node(to).String({"GET", key}), "asked");
  // The old owner does not have it (it answers ASK for a key it lacks).
  testing::ReplyPtr old = cluster_->node(from).Command({"EXISTS", key});
  ASSERT_EQ(old->type, REDIS_REPLY_ERROR);
  EXPECT_EQ(std::string(old->str).rfind("ASK ", 0), 0u) << old->str;
  // The migration ends: the slot is the new owner's everywhere.
  GiveSlot(*cluster_, slot, to);
  reply = conn->Command({"GET", key});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->str, "asked");
}

TEST_F(ClusterConnectionTest, ScansAndLoadsTheLibraryOnEveryPrimary) {
  auto conn = OpenUrl(cluster_->url());
  ASSERT_NE(conn, nullptr);
  const std::vector<std::string> keys = KeysOnEveryPrimary(*cluster_);
  for (const std::string& key : keys) ASSERT_TRUE(conn->Command({"SADD", key + ":set", "x"}).ok());
  auto found = ScanKeys(*conn, "k:{*}:set", "set");
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  std::set<std::string> unique(found->begin(), found->end());
  EXPECT_EQ(unique.size(), keys.size());

  for (int p : cluster_->Primaries()) cluster_->node(p).Command({"FUNCTION", "FLUSH"});
  Status check = CheckFunctionLibrary(*conn);
  EXPECT_EQ(check.code(), StatusCode::kVersionMismatch);
  ASSERT_TRUE(LoadFunctionLibrary(*conn).ok());
  EXPECT_TRUE(CheckFunctionLibrary(*conn).ok());
  // A primary without the library (one that joined, a promoted replica that never had it) is
  // named.
  const int bare = cluster_->Primaries().back();
  cluster_->node(bare).Command({"FUNCTION", "FLUSH"});
  check = CheckFunctionLibrary(*conn);
  EXPECT_EQ(check.code(), StatusCode::kVersionMismatch);
  EXPECT_NE(check.message().find("version none loaded on the primary 127.0.0.1:" +
                                 std::to_string(cluster_->node(bare).port())),
            std::string::npos)
      << check.message();
  ASSERT_TRUE(LoadFunctionLibrary(*conn).ok());
}

TEST(ClusterConnectionErrors, ASingleRedisIsNotAClusterAndNoSeedIsUnavailable) {
  testing::RedisServer single;
  auto endpoint =
      RedisEndpoint::Parse("redis+cluster://127.0.0.1:" + std::to_string(single.port()));
  ASSERT_TRUE(endpoint.ok());
  auto conn = RedisConnection::Open(*endpoint);
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(conn.status().message().find("not a cluster node"), std::string::npos)
      << conn.status().message();

  const int closed = testing::FreeLoopbackPort();
  endpoint = RedisEndpoint::Parse("redis+cluster://127.0.0.1:" + std::to_string(closed));
  conn = RedisConnection::Open(*endpoint);
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.status().code(), StatusCode::kUnavailable);
}

TEST(ClusterFailover, AKilledPrimaryIsReplacedAndReplicatedWritesSurvive) {
  testing::RedisCluster cluster(3, 1);
  auto conn = OpenUrl(cluster.url());
  ASSERT_NE(conn, nullptr);
  const std::vector<std::string> keys = KeysOnEveryPrimary(cluster);
  for (const std::string& key : keys) {
    conn->Append({"SET", key, "durable"});
    conn->Append({"WAIT", "1", "2000"});  // on the key's node: its replica has it
  }
  auto replies = conn->Flush();
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  for (std::size_t i = 1; i < replies->size(); i += 2) EXPECT_EQ((*replies)[i].integer, 1);

  const int victim = cluster.PrimaryFor(keys[0]);
  cluster.KillAndWaitForFailover(victim);
  // The first command to the dead node breaks the connection; Reconnect() reads the new slot map.
  auto reply = conn->Command({"GET", keys[0]});
  if (!reply.ok()) {
    EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
    EXPECT_TRUE(conn->broken());
    ASSERT_TRUE(conn->Reconnect().ok());
    reply = conn->Command({"GET", keys[0]});
  }
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->str, "durable");
  EXPECT_NE(cluster.PrimaryFor(keys[0]), victim);
  for (const std::string& key : keys) {
    auto value = conn->Command({"GET", key});
    ASSERT_TRUE(value.ok());
    EXPECT_EQ(value->str, "durable") << key;
  }
  EXPECT_EQ(conn->Nodes().size(), 3u);
}

}  // namespace
}  // namespace baton::internal
