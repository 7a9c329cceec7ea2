// Partitions (docs/cluster.md): a namespace spread over several storage namespaces "ns:p". The
// producer sends each task to partition fnv1a32(id) mod P, the worker serves every partition
// (including ones added while it runs), handlers see the namespace itself, and Cancel, settings,
// and the Inspector follow a task to its partition. On a single Redis and on a real cluster.
#include <gtest/gtest.h>

#include <mutex>
#include <set>

#include "baton/inspector.h"
#include "broker/partitions.h"
#include "harness/redis_cluster.h"
#include "worker/worker_test_util.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;

// Every id a handler ran (with how often) and every namespace it saw.
struct RunLog {
  std::mutex mu;
  std::map<std::string, int> runs;
  std::set<std::string> namespaces;

  Handler Record() {
    return [this](TaskContext& ctx) {
      std::lock_guard<std::mutex> lock(mu);
      ++runs[ctx.task().task_id];
      namespaces.insert(ctx.task().ns);
      return Status::Ok();
    };
  }
  std::size_t Distinct() {
    std::lock_guard<std::mutex> lock(mu);
    return runs.size();
  }
  int MaxRuns() {
    std::lock_guard<std::mutex> lock(mu);
    int most = 0;
    for (const auto& [id, n] : runs) most = std::max(most, n);
    return most;
  }
};

std::vector<TaskRequest> Requests(const std::string& ns, int n) {
  std::vector<TaskRequest> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    out[static_cast<std::size_t>(i)].ns = ns;
    out[static_cast<std::size_t>(i)].task_type = "job";
    out[static_cast<std::size_t>(i)].payload = {{"i", i}};
  }
  return out;
}

class WorkerPartitionsTest : public WorkerTest {
 protected:
  long long Live(const std::string& storage_ns) {
    return redis_.Command({"HLEN", internal::Keys(storage_ns).Tasks()})->integer;
  }
  // The lease_ms setting of partition p of kNs, "(none)" when unset.
  std::string LeaseSetting(int p) {
    auto r = redis_.Command(
        {"HGET", internal::Keys(internal::PartitionNamespace(kNs, p)).Config(), "lease_ms"});
    return r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : std::string("(none)");
  }
  // A task of kNs due in an hour whose id falls in `partition` of `count`.
  static TaskRequest DelayedTaskInPartition(int count, int partition) {
    TaskRequest request = Requests(kNs, 1).front();
    for (int i = 0; !request.options.task_id; ++i) {
      std::string candidate = "task-" + std::to_string(i);
      if (internal::PartitionOf(candidate, count) == partition) request.options.task_id = candidate;
    }
    request.options.delay_seconds = 3600;
    return request;
  }
};

TEST_F(WorkerPartitionsTest, TasksSpreadOverEveryPartitionAndEachRunsOnceInItsNamespace) {
  auto set = client_->SetPartitions(kNs, 4);
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(*set, 4);
  std::vector<TaskRequest> requests = Requests(kNs, 200);
  auto batch = client_->EnqueueMany(std::span<const TaskRequest>(requests.data(), 100));
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  std::vector<std::string> ids;
  for (const EnqueueResult& r : *batch) ids.push_back(r.task_id);
  for (std::size_t i = 100; i < requests.size(); ++i) {
    auto one = client_->Enqueue(requests[i]);
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    ids.push_back(one->task_id);
  }
  long long total = 0;
  for (int p = 0; p < 4; ++p) {
    const std::string storage = internal::PartitionNamespace(kNs, p);
    long long expected = 0;
    for (const std::string& id : ids) expected += internal::PartitionOf(id, 4) == p ? 1 : 0;
    EXPECT_GT(Live(storage), 0) << storage;
    EXPECT_EQ(Live(storage), expected) << storage << ": each task is in the partition of its id";
    total += Live(storage);
  }
  EXPECT_EQ(total, 200);

  RunLog log;
  Worker worker(Options());
  ASSERT_TRUE(worker.Register(kNs, "job", log.Record(), FastRetry(4)).ok());
  ASSERT_TRUE(worker.Start().ok());
  EXPECT_TRUE(WaitUntil([&] { return worker.stats().succeeded >= 200; }, 20s))
      << worker.stats().succeeded;
  worker.Stop();
  EXPECT_EQ(log.Distinct(), 200u);
  EXPECT_EQ(log.MaxRuns(), 1);
  EXPECT_EQ(log.namespaces, std::set<std::string>{kNs}) << "handlers never see ns:p";

  // A finished id sent again meets itself in its partition.
  TaskRequest again = requests[0];
  again.options.task_id = ids[7];
  auto dup = client_->Enqueue(again);
  ASSERT_TRUE(dup.ok()) << dup.status().ToString();
  EXPECT_EQ(dup->outcome, EnqueueOutcome::kDuplicate);
}

TEST_F(WorkerPartitionsTest, ARunningWorkerServesPartitionsAddedLater) {
  RunLog log;
  Worker worker(Options());
  ASSERT_TRUE(worker.Register(kNs, "job", log.Record(), FastRetry(2)).ok());
  ASSERT_TRUE(worker.Start().ok());
  ASSERT_TRUE(client_->SetPartitions(kNs, 3).ok());
  ClientOptions options;
  options.redis.url = redis_.url();
  auto producer = Client::Connect(options);  // reads the new count at once
  ASSERT_TRUE(producer.ok());
  std::vector<TaskRequest> requests = Requests(kNs, 60);
  auto results = (*producer)->EnqueueMany(requests);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  EXPECT_GT(Live(kNs + std::string(":2")), 0);
  // The worker re-reads the count every 5 s.
  EXPECT_TRUE(WaitUntil([&] { return log.Distinct() == 60; }, 15s)) << log.Distinct();
  worker.Stop();
  EXPECT_EQ(log.MaxRuns(), 1);
}

TEST_F(WorkerPartitionsTest, CancelSettingsAndInspectorFollowTheTaskToItsPartition) {
  ASSERT_TRUE(client_->ConfigureNamespace(kNs, {{"lease_ms", "4000"}}).ok());
  ASSERT_TRUE(client_->SetPartitions(kNs, 5).ok());
  // The new partitions got partition 0's settings; a later change reaches all of them.
  EXPECT_EQ(LeaseSetting(4), "4000");
  ASSERT_TRUE(client_->ConfigureNamespace(kNs, {{"lease_ms", "5000"}}).ok());
  for (int p = 0; p < 5; ++p) EXPECT_EQ(LeaseSetting(p), "5000") << p;

  // It never shrinks, and bad counts are named.
  auto shrink = client_->SetPartitions(kNs, 2);
  ASSERT_FALSE(shrink.ok());
  EXPECT_EQ(shrink.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(shrink.status().message().find("count: must not be below the current 5"),
            std::string::npos)
      << shrink.status().message();
  EXPECT_EQ(client_->SetPartitions(kNs, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(client_->SetPartitions(kNs, 1025).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(client_->SetPartitions("bad:ns", 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*client_->Partitions(kNs), 5);

  // A task id whose partition is not 0.
  const TaskRequest request = DelayedTaskInPartition(5, 3);
  const std::string id = *request.options.task_id;
  ASSERT_TRUE(client_->Enqueue(request).ok());
  EXPECT_EQ(Live(kNs + std::string(":3")), 1);

  InspectorOptions io;
  io.redis.url = redis_.url();
  auto inspector = Inspector::Connect(io);
  ASSERT_TRUE(inspector.ok());
  auto info = (*inspector)->GetTask(kNs, id);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->ns, kNs + std::string(":3"));
  auto partitions = (*inspector)->ListPartitions(kNs);
  ASSERT_TRUE(partitions.ok()) << partitions.status().ToString();
  EXPECT_EQ(*partitions, (std::vector<std::string>{"wt", "wt:1", "wt:2", "wt:3", "wt:4"}));
  auto listed = (*inspector)->ListNamespaces();
  ASSERT_TRUE(listed.ok());
  EXPECT_NE(std::find(listed->begin(), listed->end(), kNs + std::string(":3")), listed->end());

  ASSERT_TRUE(client_->Cancel(kNs, id).ok());
  EXPECT_EQ(Live(kNs + std::string(":3")), 0);
  EXPECT_EQ(client_->Cancel(kNs, "no-such-task").code(), StatusCode::kNotFound);
}

// A producer whose copy of the count is older than a growth still reaches the new partitions
// with the calls that must see every one: configure (writes all) and cancel (searches all).
TEST_F(WorkerPartitionsTest, ConfigureAndCancelReadACountGrownAMomentAgo) {
  ClientOptions options;
  options.redis.url = redis_.url();
  auto stale = Client::Connect(options);
  ASSERT_TRUE(stale.ok()) << stale.status().ToString();
  ASSERT_TRUE((*stale)->Enqueue(Requests(kNs, 1).front()).ok());  // caches P = 1 for 5 s
  ASSERT_TRUE(client_->SetPartitions(kNs, 4).ok());

  ASSERT_TRUE((*stale)->ConfigureNamespace(kNs, {{"lease_ms", "6000"}}).ok());
  for (int p = 0; p < 4; ++p) EXPECT_EQ(LeaseSetting(p), "6000") << p;

  const TaskRequest request = DelayedTaskInPartition(4, 3);
  const std::string id = *request.options.task_id;
  ASSERT_TRUE(client_->Enqueue(request).ok());
  ASSERT_EQ(Live(kNs + std::string(":3")), 1);
  EXPECT_TRUE((*stale)->Cancel(kNs, id).ok());
  EXPECT_EQ(Live(kNs + std::string(":3")), 0);
}

TEST(WorkerPartitionsClusterTest, OneNamespaceUsesSeveralPrimaries) {
  RedisCluster cluster(3, 0);
  cluster.LoadFunctions();
  const std::string ns = "big";
  ClientOptions options;
  options.redis.url = cluster.url();
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  ASSERT_TRUE((*client)->SetPartitions(ns, 6).ok());
  std::set<int> primaries;
  for (int p = 0; p < 6; ++p) {
    primaries.insert(
        cluster.PrimaryFor(internal::Keys(internal::PartitionNamespace(ns, p)).Tasks()));
  }
  EXPECT_GE(primaries.size(), 2u) << "the 6 partitions should not all hash to one primary";

  std::vector<TaskRequest> requests = Requests(ns, 300);
  auto results = (*client)->EnqueueMany(requests);
  ASSERT_TRUE(results.ok()) << results.status().ToString();

  RunLog log;
  WorkerOptions wo;
  wo.redis.url = cluster.url();
  wo.block = 200ms;
  wo.maintenance = true;
  wo.shutdown_grace = 2s;
  Worker worker(wo);
  TypeOptions to;
  to.concurrency = 4;
  ASSERT_TRUE(worker.Register(ns, "job", log.Record(), to).ok());
  ASSERT_TRUE(worker.Start().ok());
  EXPECT_TRUE(WaitUntil([&] { return log.Distinct() == 300; }, 30s)) << log.Distinct();
  worker.Stop();
  EXPECT_EQ(log.MaxRuns(), 1);
  EXPECT_EQ(log.namespaces, std::set<std::string>{ns});
}

}  // namespace
}  // namespace baton::testing
