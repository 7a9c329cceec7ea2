// The lease reaper against a real redis-server: RunOnce takes back expired leases (retry or
// dead-letter queue), leaves live ones alone, and the loop finds every type by itself.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "baton/client.h"
#include "core/keys.h"
#include "harness/redis_server.h"
#include "scheduler/reaper.h"

namespace baton::internal {
namespace {

using namespace std::chrono_literals;
using baton::testing::RedisServer;

constexpr const char* kNs = "rt";

class ReaperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    redis_.LoadFunctions();
    ClientOptions options;
    options.redis_url = redis_.url();
    auto client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }

  std::vector<std::string> Enqueue(const std::string& type, int n, int max_retry) {
    std::vector<TaskRequest> reqs(static_cast<std::size_t>(n));
    for (auto& r : reqs) {
      r.ns = kNs;
      r.task_type = type;
      r.options.max_retry = max_retry;
    }
    auto res = client_->EnqueueMany(reqs);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    std::vector<std::string> ids;
    if (res.ok()) {
      for (const auto& one : *res) ids.push_back(one.task_id);
    }
    return ids;
  }

  // Leases `count` tasks of `type` to `consumer` in group "g" (what a worker's dequeue does).
  void Dequeue(const std::string& type, const std::string& consumer, int count) {
    Keys k(kNs);
    auto r = redis_.Command({"FCALL", "baton_dequeue", "6", k.Stream(type), k.Tasks(), k.Events(),
                             k.Bodies(), k.Errors(), k.Dead(type), "g", consumer,
                             std::to_string(count), "1000"});
    ASSERT_EQ(r->type, REDIS_REPLY_ARRAY) << (r->type == REDIS_REPLY_ERROR ? r->str : "");
    ASSERT_EQ(r->element[0]->elements, static_cast<std::size_t>(9 * count));
  }

  Reaper::Options Opts(std::chrono::milliseconds lease) const {
    Reaper::Options o;
    o.redis_url = redis_.url();
    o.lease = lease;
    o.name = "test-reaper";
    o.default_retry.base = 50ms;
    o.default_retry.max = 100ms;
    return o;
  }
  std::string Record(const std::string& id) {
    return redis_.String({"HGET", Keys(kNs).Tasks(), id});
  }
  long long PendingCount(const std::string& type) {
    auto r = redis_.Command({"XPENDING", Keys(kNs).Stream(type), "g"});
    return r->type == REDIS_REPLY_ARRAY && r->elements > 0 ? r->element[0]->integer : 0;
  }

  RedisServer redis_;
  std::unique_ptr<Client> client_;
};

TEST_F(ReaperTest, RunOnceReclaimsExpiredLeasesOnly) {
  std::vector<std::string> ids = Enqueue("t", 3, 2);
  Dequeue("t", "crashed", 3);
  Reaper reaper(Opts(200ms));

  auto fresh = reaper.RunOnce(kNs, "t");
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(fresh->reclaimed, 0);  // leases still live
  EXPECT_EQ(PendingCount("t"), 3);

  std::this_thread::sleep_for(250ms);
  auto expired = reaper.RunOnce(kNs, "t");
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  EXPECT_EQ(expired->reclaimed, 3);
  EXPECT_EQ(expired->retried, 3);
  EXPECT_EQ(expired->dead, 0);
  EXPECT_EQ(PendingCount("t"), 0);
  for (const std::string& id : ids) {
    EXPECT_EQ(Record(id).rfind("retry|t|1|", 0), 0u) << Record(id);
    auto errors = nlohmann::json::parse(redis_.String({"HGET", Keys(kNs).Errors(), id}));
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0]["kind"], "lease_expired");
  }
  EXPECT_EQ(redis_.Integer({"ZCARD", Keys(kNs).Scheduled("t")}), 3);
}

TEST_F(ReaperTest, ReclaimedTaskWithoutRetriesLeftGoesDead) {
  std::vector<std::string> ids = Enqueue("d", 2, 0);
  Dequeue("d", "crashed", 2);
  std::this_thread::sleep_for(150ms);
  Reaper::Options o = Opts(100ms);
  o.count = 1;  // forces RunOnce to loop
  Reaper reaper(o);
  auto r = reaper.RunOnce(kNs, "d");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->reclaimed, 2);
  EXPECT_EQ(r->dead, 2);
  for (const std::string& id : ids) {
    EXPECT_FALSE(redis_.String({"ZSCORE", Keys(kNs).Dead("d"), id}).empty());
  }
}

TEST_F(ReaperTest, MissingStreamOrNoGroupsIsNothingToDo) {
  Reaper reaper(Opts(100ms));
  auto none = reaper.RunOnce(kNs, "nothing");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->reclaimed, 0);
  Enqueue("nogroup", 1, 0);  // a stream without a consumer group
  auto no_group = reaper.RunOnce(kNs, "nogroup");
  ASSERT_TRUE(no_group.ok()) << no_group.status().ToString();
  EXPECT_EQ(no_group->reclaimed, 0);
}

TEST_F(ReaperTest, LoopFindsEveryTypeAndReclaims) {
  std::vector<std::string> a = Enqueue("a", 1, 3);
  std::vector<std::string> b = Enqueue("b", 2, 3);
  Dequeue("a", "crashed", 1);
  Dequeue("b", "crashed", 2);
  redis_.Command({"SADD", std::string(Keys::kNamespaces), kNs});
  redis_.Command({"SADD", Keys(kNs).Types(), "a", "b"});
  Reaper::Options o = Opts(200ms);
  o.interval = 50ms;
  Reaper reaper(o);
  ASSERT_TRUE(reaper.Start().ok());
  auto deadline = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < deadline &&
         (PendingCount("a") + PendingCount("b")) > 0) {
    std::this_thread::sleep_for(10ms);
  }
  reaper.Stop();
  EXPECT_EQ(PendingCount("a"), 0);
  EXPECT_EQ(PendingCount("b"), 0);
  EXPECT_EQ(redis_.Integer({"ZCARD", Keys(kNs).Scheduled("a")}) +
                redis_.Integer({"ZCARD", Keys(kNs).Scheduled("b")}),
            3);
}

TEST_F(ReaperTest, StartFailsOnABadUrl) {
  Reaper::Options o = Opts(100ms);
  o.redis_url = "http://nope";
  Reaper reaper(o);
  EXPECT_FALSE(reaper.Start().ok());
}

}  // namespace
}  // namespace baton::internal
