#pragma once
// Test helpers of the scheduler's redis tests: tasks written with the raw functions (fn::), the
// way any client of any language would, without baton::Client's conveniences (it registers the
// namespace in baton:v2:namespaces; these do not).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "baton/client.h"
#include "broker/functions.h"
#include "broker/task_codec.h"
#include "harness/redis_server.h"

namespace baton::internal::testutil {

// baton_v2_enqueue of `n` tasks of (ns, type), due at run_at_ms (0: now), max_retry each. Returns
// their ids.
inline std::vector<std::string> RawEnqueue(baton::testing::RedisServer& redis,
                                           const std::string& ns, const std::string& type, int n,
                                           std::int64_t run_at_ms = 0, int max_retry = 3) {
  std::vector<std::string> ids;
  std::vector<std::string> args;
  for (int i = 0; i < n; ++i) {
    TaskRequest req;
    req.ns = ns;
    req.task_type = type;
    req.options.max_retry = max_retry;
    StatusOr<Task> task = Client::BuildTask(req);
    EXPECT_TRUE(task.ok()) << task.status().ToString();
    if (!task.ok()) return ids;
    ids.push_back(task->task_id);
    std::vector<std::string> one = EncodeEnqueueArgs(*task, run_at_ms, "", 0);
    args.insert(args.end(), one.begin(), one.end());
  }
  auto reply = redis.Command(fn::Enqueue(ns, type, static_cast<std::size_t>(n), {}, args));
  EXPECT_EQ(reply->type, REDIS_REPLY_ARRAY) << (reply->str ? reply->str : "");
  return ids;
}

// baton_v2_dequeue of up to `count` tasks for `consumer` of group "g", leased for lease_ms.
// Returns the delivered (id, SID) pairs; `lease_deadline_ms`, when given, receives when their
// leases end (the reply's lease_deadline_ms).
inline std::vector<fn::HeldTask> RawDequeue(baton::testing::RedisServer& redis,
                                            const std::string& ns, const std::string& type,
                                            const std::string& consumer, int count,
                                            std::int64_t lease_ms,
                                            std::int64_t* lease_deadline_ms = nullptr) {
  std::vector<fn::HeldTask> out;
  auto reply = redis.Command(
      fn::Dequeue(ns, type, "g", consumer, static_cast<std::size_t>(count), lease_ms));
  EXPECT_EQ(reply->type, REDIS_REPLY_ARRAY) << (reply->str ? reply->str : "");
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1) return out;
  if (lease_deadline_ms != nullptr && reply->elements >= 3) {
    *lease_deadline_ms = reply->element[2]->integer;
  }
  const redisReply* entries = reply->element[0];
  for (std::size_t i = 0; i + 8 < entries->elements; i += 9) {
    out.push_back({std::string(entries->element[i + 1]->str, entries->element[i + 1]->len),
                   std::string(entries->element[i]->str, entries->element[i]->len)});
  }
  return out;
}

// The Redis server's clock, Unix ms.
inline std::int64_t ServerMs(baton::testing::RedisServer& redis) {
  auto r = redis.Command({"TIME"});
  return std::stoll(r->element[0]->str) * 1000 + std::stoll(r->element[1]->str) / 1000;
}

}  // namespace baton::internal::testutil
