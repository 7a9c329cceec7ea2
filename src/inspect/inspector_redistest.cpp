// The Inspector against a real redis-server: queue counts in a known situation, pending entries
// per consumer with their leases, GetTask in every state (final states from the done ZSET and the
// ended HASH, timelines out of batched events entries), and the dead-letter queue (list with
// filters, replay with a new payload or refused, delete, purge, the caps).
#include <gtest/gtest.h>

#include <algorithm>

#include "inspect/event_scan.h"
#include "inspect/inspect_test_util.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;

class InspectorTest : public InspectTest {
 protected:
  // The events entries of the namespace, oldest first, as field maps.
  std::vector<std::map<std::string, std::string>> EventEntries() {
    std::vector<std::map<std::string, std::string>> out;
    auto reply = redis_.Command({"XRANGE", keys().Events(), "-", "+"});
    for (std::size_t i = 0; i < reply->elements; ++i) {
      const redisReply* fields = reply->element[i]->element[1];
      std::map<std::string, std::string> entry;
      for (std::size_t f = 0; f + 1 < fields->elements; f += 2) {
        entry[fields->element[f]->str] = fields->element[f + 1]->str;
      }
      out.push_back(std::move(entry));
    }
    return out;
  }
};

EnqueueOptions Delayed(std::int64_t seconds) {
  EnqueueOptions o;
  o.delay_seconds = seconds;
  return o;
}

TEST_F(InspectorTest, QueuesCountAKnownSituation) {
  std::string dead = MakeDead("email", "smtp refused");
  std::string retrying = Enqueue("email");
  auto first = Dequeue("email", "g", "c1", 1);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(Fail("email", "g", first[0], "timeout talking to smtp"), "retry");
  for (int i = 0; i < 5; ++i) Enqueue("email", "{\"i\":" + std::to_string(i) + "}");
  Enqueue("email", "{}", Delayed(3600));
  Enqueue("email", "{}", Delayed(7200));
  ASSERT_EQ(Dequeue("email", "g", "c1", 2).size(), 2u);
  Enqueue("sms");

  auto namespaces = inspector_->ListNamespaces();
  ASSERT_TRUE(namespaces.ok()) << namespaces.status().ToString();
  EXPECT_NE(std::find(namespaces->begin(), namespaces->end(), kNs), namespaces->end());

  auto queues = inspector_->ListQueues(kNs);
  ASSERT_TRUE(queues.ok()) << queues.status().ToString();
  ASSERT_EQ(queues->size(), 2u);
  const QueueInfo& email = (*queues)[0];
  EXPECT_EQ(email.type, "email");
  EXPECT_EQ(email.stream_length, 5);
  EXPECT_EQ(email.ready, 3);
  EXPECT_EQ(email.in_flight, 2);
  EXPECT_EQ(email.delayed, 2);
  EXPECT_EQ(email.retrying, 1);
  EXPECT_TRUE(email.scheduled_split_exact);
  EXPECT_EQ(email.dead, 1);
  EXPECT_EQ(email.leased, 2);
  EXPECT_EQ(email.expired_leases, 0);
  EXPECT_TRUE(email.ready_exact);
  ASSERT_EQ(email.groups.size(), 1u);
  EXPECT_EQ(email.groups[0].name, "g");
  EXPECT_EQ(email.groups[0].pending, 2);
  ASSERT_EQ(email.groups[0].consumers.size(), 1u);
  EXPECT_EQ(email.groups[0].consumers[0].name, "c1");
  EXPECT_EQ(email.groups[0].consumers[0].pending, 2);
  EXPECT_EQ(email.consumers, 1);
  EXPECT_EQ(email.live_consumers, 1);
  ASSERT_TRUE(email.oldest_age_ms.has_value());
  EXPECT_GE(*email.oldest_age_ms, 0);
  // Events of the last minute: 7 entered the stream, 4 were delivered, 2 failed, none done.
  EXPECT_EQ(email.rates.queued, 7);
  EXPECT_EQ(email.rates.started, 4);
  EXPECT_EQ(email.rates.failed, 2);
  EXPECT_EQ(email.rates.done, 0);
  EXPECT_TRUE(email.rates.exact);

  const QueueInfo& sms = (*queues)[1];
  EXPECT_EQ(sms.type, "sms");
  EXPECT_TRUE(sms.groups.empty());
  EXPECT_EQ(sms.ready, 1);  // no group: everything in the stream waits
  EXPECT_EQ(sms.in_flight, 0);

  nlohmann::json j = email.ToJson();
  EXPECT_EQ(j["ready"], 3);
  EXPECT_EQ(j["groups"][0]["consumers"][0]["name"], "c1");
  (void)dead;
  (void)retrying;
}

TEST_F(InspectorTest, NamespacesWithWorkAreListedRegisteredOrNot) {
  Enqueue("t");
  Enqueue("t", "{}", {}, "other");
  Call({"DEL", std::string(internal::Keys::kNamespaces)});  // e.g. an SDK that does not register
  Call({"SADD", std::string(internal::Keys::kNamespaces), "registered-only"});
  auto namespaces = inspector_->ListNamespaces();
  ASSERT_TRUE(namespaces.ok()) << namespaces.status().ToString();
  EXPECT_EQ(*namespaces, (std::vector<std::string>{"it", "other", "registered-only"}));
}

TEST_F(InspectorTest, ReadyCountsTheEntriesAfterTheGroupPosition) {
  for (int i = 0; i < 4; ++i) Enqueue("t");
  auto d = Dequeue("t", "g", "c1", 2);
  ASSERT_EQ(d.size(), 2u);
  Ack("t", "g", d[1]);  // deletes the group's last delivered entry
  auto q = inspector_->GetQueue(kNs, "t");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->stream_length, 3);
  EXPECT_EQ(q->in_flight, 1);
  EXPECT_EQ(q->ready, 2);
  EXPECT_TRUE(q->ready_exact);
  EXPECT_EQ(q->groups[0].ready, 2);
  EXPECT_EQ(q->rates.done, 1);
}

// Regression: "phantom backlog". Cancelling queued tasks deletes their entries after the group's
// position; Redis 7.0 still counts them in XINFO GROUPS lag. READY must not.
TEST_F(InspectorTest, PhantomBacklogAfterCancelIsNotReady) {
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(Enqueue("t"));
  auto held = Dequeue("t", "g", "c1", 1);
  ASSERT_EQ(held.size(), 1u);
  for (int i = 1; i < 4; ++i) ASSERT_TRUE(client_->Cancel(kNs, ids[i]).ok());
  auto q = inspector_->GetQueue(kNs, "t");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->stream_length, 1);  // the running task's entry
  EXPECT_EQ(q->in_flight, 1);
  EXPECT_EQ(q->ready, 0);
  EXPECT_EQ(q->groups[0].ready, 0);

  Ack("t", "g", held[0]);
  auto empty = inspector_->GetQueue(kNs, "t");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->stream_length, 0);
  EXPECT_EQ(empty->ready, 0);
  EXPECT_FALSE(empty->oldest_age_ms.has_value());
}

TEST_F(InspectorTest, ReadyOfAGroupThatSkippedTheBacklogIsZero) {
  Enqueue("t");
  Enqueue("t");
  Call({"XGROUP", "CREATE", keys().Stream("t"), "g", "$"});
  auto q = inspector_->GetQueue(kNs, "t");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->stream_length, 2);
  EXPECT_EQ(q->ready, 0);  // nothing after its position: the doctor reports the skipped entries
  Enqueue("t");            // after its position: ready
  EXPECT_EQ(inspector_->GetQueue(kNs, "t")->ready, 1);
}

TEST_F(InspectorTest, GetQueueOfAnUnknownTypeIsNotFound) {
  auto q = inspector_->GetQueue(kNs, "nope");
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::kNotFound);
  auto bad = inspector_->GetQueue(kNs, "bad type");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("task_type"), std::string::npos);
}

TEST_F(InspectorTest, PendingPerConsumerWithTheLongestIdleEntries) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(Enqueue("t"));
  ASSERT_EQ(Dequeue("t", "g", "c1", 2).size(), 2u);
  Sleep(30ms);
  ASSERT_EQ(Dequeue("t", "g", "c2", 1, kShortLeaseMs).size(), 1u);
  Sleep(1100ms);  // c2's lease (1 s) expires; nothing reclaims it
  auto report = inspector_->Pending(kNs, "t");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->groups.size(), 1u);
  const PendingGroup& g = report->groups[0];
  EXPECT_EQ(g.group, "g");
  EXPECT_EQ(g.count, 3);
  EXPECT_TRUE(g.complete);
  ASSERT_EQ(g.consumers.size(), 2u);
  EXPECT_EQ(g.consumers[0].name, "c1");
  EXPECT_EQ(g.consumers[0].count, 2);
  EXPECT_EQ(g.consumers[1].name, "c2");
  EXPECT_EQ(g.consumers[1].count, 1);
  EXPECT_GE(g.consumers[0].max_idle_ms, g.consumers[1].max_idle_ms);
  EXPECT_EQ(g.consumers[0].expired, 0);
  EXPECT_EQ(g.consumers[1].expired, 1);
  EXPECT_EQ(report->expired_leases, 1);
  ASSERT_EQ(g.longest_idle.size(), 3u);
  const PendingEntry& newest = g.longest_idle.back();
  EXPECT_EQ(newest.consumer, "c2");
  EXPECT_EQ(newest.task_id, ids[2]);
  ASSERT_TRUE(newest.lease_deadline_ms.has_value());
  EXPECT_LT(*newest.lease_deadline_ms, report->now_ms);
  ASSERT_TRUE(g.longest_idle.front().lease_deadline_ms.has_value());
  EXPECT_GT(*g.longest_idle.front().lease_deadline_ms, report->now_ms + 500000);
  nlohmann::json j = report->ToJson();
  EXPECT_EQ(j["expired_leases"], 1);
  EXPECT_EQ(j["groups"][0]["consumers"][1]["expired"], 1);
}

TEST_F(InspectorTest, GetTaskQueuedAndActive) {
  std::string id = Enqueue("t", "{\"to\":\"a@b.c\", \"n\": 1.50}");
  auto queued = inspector_->GetTask(kNs, id);
  ASSERT_TRUE(queued.ok()) << queued.status().ToString();
  EXPECT_EQ(queued->state, TaskState::kQueued);
  EXPECT_EQ(queued->type, "t");
  EXPECT_FALSE(queued->stream_id.empty());
  ASSERT_TRUE(queued->body.has_value());
  EXPECT_EQ(nlohmann::json::parse(queued->body->payload),
            nlohmann::json::parse("{\"to\":\"a@b.c\",\"n\":1.50}"));
  ASSERT_EQ(queued->events.size(), 1u);
  EXPECT_EQ(queued->events[0].from, "new");
  EXPECT_EQ(queued->events[0].to, "queued");
  EXPECT_TRUE(queued->events_complete);

  ASSERT_EQ(Dequeue("t", "g", "worker-7", 1).size(), 1u);
  auto active = inspector_->GetTask(kNs, id);
  ASSERT_TRUE(active.ok());
  EXPECT_EQ(active->state, TaskState::kActive);
  ASSERT_TRUE(active->lease_deadline_ms.has_value());
  EXPECT_GT(*active->lease_deadline_ms, active->now_ms + 500000);  // the 600 s lease of Dequeue
  ASSERT_EQ(active->leases.size(), 1u);
  EXPECT_EQ(active->leases[0].group, "g");
  EXPECT_EQ(active->leases[0].consumer, "worker-7");
  EXPECT_EQ(active->leases[0].deliveries, 1);
  ASSERT_EQ(active->events.size(), 2u);
  EXPECT_EQ(active->events[1].to, "active");
  EXPECT_EQ(active->events[1].worker, "worker-7");
  EXPECT_EQ(active->events[1].attempt, 1);
  EXPECT_EQ(active->ToJson()["state"], "active");
  EXPECT_EQ(active->ToJson()["lease_deadline_ms"], *active->lease_deadline_ms);
}

// Protocol v2 keeps no lease per task: an entry delivered outside baton_v2_dequeue (a plain
// XREADGROUP) is leased like any other, for the namespace's lease_ms since its delivery, since its
// consumer stored no lease length of its own (reclaim takes it back after that).
TEST_F(InspectorTest, PendingByHandIsActiveWithTheNamespacesLease) {
  std::string id = Enqueue("t");
  Call(internal::fn::Configure(
      kNs, std::vector<std::pair<std::string, std::string>>{{"lease_ms", "45000"}}));
  Call({"XGROUP", "CREATE", keys().Stream("t"), "g", "0"});
  Call({"XREADGROUP", "GROUP", "g", "by-hand", "COUNT", "1", "STREAMS", keys().Stream("t"), ">"});
  auto task = inspector_->GetTask(kNs, id);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->state, TaskState::kActive);
  ASSERT_TRUE(task->lease_deadline_ms.has_value());
  EXPECT_LE(*task->lease_deadline_ms, task->now_ms + 45000);
  EXPECT_GT(*task->lease_deadline_ms, task->now_ms + 44000);
  ASSERT_EQ(task->leases.size(), 1u);
  EXPECT_EQ(task->leases[0].consumer, "by-hand");
  EXPECT_EQ(task->leases[0].lease_deadline_ms, *task->lease_deadline_ms);
}

// A consumer's lease length is the one it asked for last (leases:TYPE), and a heartbeat renews the
// lease from that moment: the lease end moves, the delivery count does not.
TEST_F(InspectorTest, LeaseEndFollowsTheConsumersLeaseAndItsHeartbeats) {
  std::string id = Enqueue("t");
  auto d = Dequeue("t", "g", "c1", 1, 5000);
  ASSERT_EQ(d.size(), 1u);
  auto first = inspector_->GetTask(kNs, id);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->lease_deadline_ms.has_value());
  EXPECT_LE(*first->lease_deadline_ms, first->now_ms + 5000);
  EXPECT_GT(*first->lease_deadline_ms, first->now_ms + 4000);
  Sleep(300ms);
  const internal::fn::HeldTask held[] = {{d[0].id, d[0].sid}};
  internal::Reply r = Call(internal::fn::Extend(kNs, "t", "g", "c1", 20000, held));
  ASSERT_TRUE(r.is_array());
  ASSERT_EQ(r.elements.size(), 1u);
  auto renewed = inspector_->GetTask(kNs, id);
  ASSERT_TRUE(renewed.ok());
  ASSERT_TRUE(renewed->lease_deadline_ms.has_value());
  EXPECT_LE(*renewed->lease_deadline_ms, renewed->now_ms + 20000);
  EXPECT_GT(*renewed->lease_deadline_ms, renewed->now_ms + 19000);
  ASSERT_EQ(renewed->leases.size(), 1u);
  EXPECT_LT(renewed->leases[0].idle_ms, 300);  // reset by the heartbeat
  EXPECT_EQ(renewed->leases[0].deliveries, 1);
}

TEST_F(InspectorTest, GetTaskScheduledRetryDeadDone) {
  std::string scheduled = Enqueue("t", "{\"s\":1}", Delayed(600));
  auto s = inspector_->GetTask(kNs, scheduled);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->state, TaskState::kScheduled);
  ASSERT_TRUE(s->due_ms.has_value());
  EXPECT_GT(*s->due_ms, s->now_ms + 590000);
  ASSERT_TRUE(s->body.has_value());
  EXPECT_EQ(s->body->payload, "{\"s\":1}");
  EXPECT_EQ(s->body->delay_seconds, "600");

  std::string retry = Enqueue("u");
  auto d = Dequeue("u", "g", "c1", 1);
  ASSERT_EQ(Fail("u", "g", d[0], "connection reset"), "retry");
  auto r = inspector_->GetTask(kNs, retry);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->state, TaskState::kRetry);
  EXPECT_EQ(r->attempts, 1);
  ASSERT_EQ(r->errors.size(), 1u);
  EXPECT_EQ(r->errors[0].error, "connection reset");
  EXPECT_EQ(r->errors[0].stack, "at handler()\nat main()");
  EXPECT_EQ(r->errors[0].worker, "c1");
  ASSERT_TRUE(r->due_ms.has_value());
  EXPECT_EQ(r->events.back().to, "retry");
  EXPECT_EQ(r->events.back().error, "connection reset");

  std::string dead = MakeDead("v", "bad input", "{\"x\":2}");
  auto dd = inspector_->GetTask(kNs, dead);
  ASSERT_TRUE(dd.ok());
  EXPECT_EQ(dd->state, TaskState::kDead);
  ASSERT_TRUE(dd->dead_since_ms.has_value());
  ASSERT_TRUE(dd->body.has_value());
  EXPECT_EQ(dd->body->payload, "{\"x\":2}");
  EXPECT_EQ(dd->errors.back().error, "bad input");

  std::string done = Enqueue("w");
  auto wd = Dequeue("w", "g", "c9", 1);
  Ack("w", "g", wd[0], "c9");
  auto dn = inspector_->GetTask(kNs, done);
  ASSERT_TRUE(dn.ok());
  EXPECT_EQ(dn->state, TaskState::kDone);
  EXPECT_EQ(dn->type, "w");  // done keeps no type: it comes from the events
  EXPECT_EQ(dn->finished_by, "c9");
  EXPECT_EQ(dn->attempts, 1);
  ASSERT_TRUE(dn->finished_ms.has_value());
  EXPECT_LE(*dn->finished_ms, dn->now_ms);
  EXPECT_GT(*dn->finished_ms, dn->now_ms - 60000);
  EXPECT_FALSE(dn->body.has_value());
  ASSERT_EQ(dn->events.size(), 3u);
  EXPECT_EQ(dn->events[2].to, "done");
  EXPECT_TRUE(dn->events_complete);
}

TEST_F(InspectorTest, GetTaskCancelledDeletedMissing) {
  std::string cancelled = Enqueue("t");
  ASSERT_TRUE(client_->Cancel(kNs, cancelled).ok());
  auto c = inspector_->GetTask(kNs, cancelled);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->state, TaskState::kCancelled);
  EXPECT_EQ(c->type, "t");
  EXPECT_EQ(c->attempts, 0);
  EXPECT_TRUE(c->finished_ms.has_value());
  EXPECT_EQ(c->events.back().from, "queued");
  EXPECT_EQ(c->events.back().to, "cancelled");

  std::string dead = MakeDead("t", "x");
  ASSERT_TRUE(inspector_->DeleteDead(kNs, dead).ok());
  auto d = inspector_->GetTask(kNs, dead);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->state, TaskState::kDeleted);
  EXPECT_EQ(d->attempts, 1);
  EXPECT_EQ(d->ToJson()["state"], "deleted");

  auto missing = inspector_->GetTask(kNs, "no-such-task");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto invalid = inspector_->GetTask(kNs, "bad id!");
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(InspectorTest, DoneTaskWhoseEventsAreGoneIsStillDone) {
  std::string done = Enqueue("w");
  auto d = Dequeue("w", "g", "c9", 1);
  Ack("w", "g", d[0], "c9");
  Call({"DEL", keys().Events()});
  auto task = inspector_->GetTask(kNs, done);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->state, TaskState::kDone);
  EXPECT_TRUE(task->finished_ms.has_value());
  EXPECT_EQ(task->type, "");
  EXPECT_EQ(task->attempts, 0);
  EXPECT_EQ(task->finished_by, "");
  EXPECT_TRUE(task->events.empty());
}

TEST_F(InspectorTest, DeadLetterCapDropsTheOldestDeadTask) {
  const std::pair<std::string, std::string> cap[] = {{"dlq_max", "1"}};
  Call(internal::fn::Configure(kNs, cap));
  std::string first = MakeDead("t", "e1");
  std::string second = MakeDead("t", "e2");
  auto dropped = inspector_->GetTask(kNs, first);
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_EQ(dropped->state, TaskState::kDropped);
  EXPECT_EQ(dropped->type, "t");
  EXPECT_EQ(dropped->attempts, 1);
  EXPECT_TRUE(dropped->finished_ms.has_value());
  EXPECT_TRUE(dropped->errors.empty());
  ASSERT_FALSE(dropped->events.empty());
  EXPECT_EQ(dropped->events.back().from, "dead");
  EXPECT_EQ(dropped->events.back().to, "dropped");
  EXPECT_NE(dropped->events.back().error.find("cap"), std::string::npos)
      << dropped->events.back().error;
  EXPECT_EQ(dropped->ToJson()["state"], "dropped");
  EXPECT_EQ(inspector_->GetTask(kNs, second)->state, TaskState::kDead);
  DeadFilter all;
  ASSERT_EQ(inspector_->ListDead(kNs, all)->size(), 1u);
  EXPECT_EQ(inspector_->GetQueue(kNs, "t")->rates.dropped, 1);
}

TEST_F(InspectorTest, TimelineTakesTheTaskOutOfBatchedEntries) {
  // x fails once and comes back; then x and y are delivered by one dequeue call, with different
  // attempts, and acked by one ack call.
  std::string x = Enqueue("t");
  auto first = Dequeue("t", "g", "c1", 1);
  ASSERT_EQ(Fail("t", "g", first[0], "flaky", "error", "c1", /*base_ms=*/1000), "retry");
  Sleep(1300ms);
  Call(internal::fn::Promote(kNs, "t", 100));
  std::vector<TaskRequest> batch(2);
  for (auto& r : batch) {
    r.ns = kNs;
    r.task_type = "t";
  }
  auto enqueued = client_->EnqueueMany(batch);
  ASSERT_TRUE(enqueued.ok()) << enqueued.status().ToString();
  std::string y = (*enqueued)[0].task_id;
  std::string z = (*enqueued)[1].task_id;
  auto both = Dequeue("t", "g", "c2", 3);
  ASSERT_EQ(both.size(), 3u);
  std::vector<internal::fn::HeldTask> held;
  for (const auto& d : both) held.push_back({d.id, d.sid});
  internal::Reply acked = Call(internal::fn::Ack(kNs, "t", "g", "c2", held));
  ASSERT_EQ(acked.elements.size(), 3u);

  // The entries really are batched: one per call and transition.
  int batched = 0;
  for (const auto& e : EventEntries()) {
    if (internal::WordCount(e.at("ids")) == 3) {
      ++batched;
      EXPECT_EQ(internal::WordCount(e.at("attempts")), 3u);
    }
  }
  EXPECT_EQ(batched, 2);  // queued -> active and active -> done

  auto tx = inspector_->GetTask(kNs, x);
  ASSERT_TRUE(tx.ok());
  std::vector<std::pair<std::string, int>> path;
  for (const TaskEvent& e : tx->events) path.push_back({e.from + ">" + e.to, e.attempt});
  std::vector<std::pair<std::string, int>> want = {{"new>queued", 0},    {"queued>active", 1},
                                                   {"active>retry", 1},  {"retry>queued", 1},
                                                   {"queued>active", 2}, {"active>done", 2}};
  EXPECT_EQ(path, want);
  EXPECT_EQ(tx->events[2].error, "flaky");
  EXPECT_EQ(tx->events[5].worker, "c2");
  EXPECT_TRUE(tx->events_complete);
  EXPECT_EQ(tx->attempts, 2);
  EXPECT_EQ(tx->finished_by, "c2");

  auto tz = inspector_->GetTask(kNs, z);
  ASSERT_TRUE(tz.ok());
  ASSERT_EQ(tz->events.size(), 3u);
  EXPECT_EQ(tz->events[0].from, "new");
  EXPECT_EQ(tz->events[1].attempt, 1);
  EXPECT_EQ(tz->events[2].to, "done");
  EXPECT_EQ(tz->attempts, 1);
  // y and z share every entry: y's timeline is the same walk.
  EXPECT_EQ(inspector_->GetTask(kNs, y)->events.size(), 3u);
  EXPECT_EQ(inspector_->GetQueue(kNs, "t")->rates.done, 3);
}

TEST_F(InspectorTest, ListDeadFiltersByTypeTimeAndLimit) {
  std::string a1 = MakeDead("a", "e1");
  Sleep(15ms);
  std::string b1 = MakeDead("b", "e2");
  Sleep(15ms);
  std::string a2 = MakeDead("a", "e3");

  DeadFilter all;
  auto list = inspector_->ListDead(kNs, all);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].id, a1);
  EXPECT_EQ((*list)[1].id, b1);
  EXPECT_EQ((*list)[2].id, a2);
  EXPECT_EQ((*list)[1].type, "b");
  EXPECT_EQ((*list)[1].last_error, "e2");
  EXPECT_EQ((*list)[1].kind, "error");
  EXPECT_EQ((*list)[1].attempts, 1);

  DeadFilter by_type;
  by_type.type = "a";
  auto only_a = inspector_->ListDead(kNs, by_type);
  ASSERT_EQ(only_a->size(), 2u);

  DeadFilter window;
  window.since_ms = (*list)[1].dead_since_ms;
  window.until_ms = (*list)[1].dead_since_ms;
  auto middle = inspector_->ListDead(kNs, window);
  ASSERT_EQ(middle->size(), 1u);
  EXPECT_EQ((*middle)[0].id, b1);

  DeadFilter since;
  since.since_ms = (*list)[1].dead_since_ms;
  EXPECT_EQ(inspector_->ListDead(kNs, since)->size(), 2u);

  DeadFilter limited;
  limited.limit = 2;
  auto first_two = inspector_->ListDead(kNs, limited);
  ASSERT_EQ(first_two->size(), 2u);
  EXPECT_EQ((*first_two)[1].id, b1);
}

TEST_F(InspectorTest, ReplayWithANewPayloadKeepsTheErrorHistory) {
  std::string id = MakeDead("t", "bad address", "{\"to\":\"nobody\"}");
  auto sid = inspector_->ReplayDead(kNs, id, std::string("{\"to\":\"someone@example.com\"}"));
  ASSERT_TRUE(sid.ok()) << sid.status().ToString();
  auto task = inspector_->GetTask(kNs, id);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->state, TaskState::kQueued);
  EXPECT_EQ(task->stream_id, *sid);
  EXPECT_EQ(task->body->payload, "{\"to\":\"someone@example.com\"}");
  EXPECT_EQ(task->body->attempt, "0");
  ASSERT_EQ(task->errors.size(), 1u);
  EXPECT_EQ(task->errors[0].error, "bad address");
  EXPECT_EQ(task->events.back().from, "dead");
  EXPECT_EQ(task->events.back().to, "queued");

  // It is no longer dead: a second replay is a conflict; unknown ids are not found.
  auto again = inspector_->ReplayDead(kNs, id);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kConflict);
  EXPECT_EQ(inspector_->ReplayDead(kNs, "ghost").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(inspector_->DeleteDead(kNs, "ghost").code(), StatusCode::kNotFound);
}

// The error history is one field per failure (docs/keyspace.md, "Error history"): task show lists
// every attempt oldest first, a replay's failures continue the list, the DLQ shows the newest.
TEST_F(InspectorTest, TaskShowListsEveryAttemptOldestFirst) {
  EnqueueOptions options;
  options.max_retry = 2;
  std::string id = Enqueue("h", "{}", options);
  for (int attempt = 1; attempt <= 3; ++attempt) {
    const std::string n = std::to_string(attempt);
    auto d = Dequeue("h", "g", "c" + n, 1);
    ASSERT_EQ(d.size(), 1u);
    ASSERT_EQ(Fail("h", "g", d[0], "err " + n, "error", "c" + n, /*base_ms=*/0),
              attempt < 3 ? "retry" : "dead");
    if (attempt < 3) {
      Sleep(2ms);
      Call(internal::fn::Promote(kNs, "h", 10));
    }
  }
  auto task = inspector_->GetTask(kNs, id);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  ASSERT_EQ(task->errors.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const std::string n = std::to_string(i + 1);
    EXPECT_EQ(task->errors[i].attempt, i + 1);
    EXPECT_EQ(task->errors[i].error, "err " + n);
    EXPECT_EQ(task->errors[i].worker, "c" + n);
    EXPECT_EQ(task->errors[i].kind, "error");
  }
  EXPECT_LE(task->errors[0].at_ms, task->errors[2].at_ms);

  ASSERT_TRUE(inspector_->ReplayDead(kNs, id).ok());
  auto d = Dequeue("h", "g", "c4", 1);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(Fail("h", "g", d[0], "after replay", "non_retryable", "c4"), "dead");
  auto again = inspector_->GetTask(kNs, id);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->errors.size(), 4u);
  EXPECT_EQ(again->errors[0].error, "err 1");
  EXPECT_EQ(again->errors[3].error, "after replay");
  EXPECT_EQ(again->errors[3].attempt, 1);  // a replay starts the attempts again
  EXPECT_EQ(again->ToJson()["errors"].size(), 4u);

  auto dead = inspector_->ListDead(kNs, {});
  ASSERT_TRUE(dead.ok()) << dead.status().ToString();
  ASSERT_EQ(dead->size(), 1u);
  EXPECT_EQ((*dead)[0].last_error, "after replay");
  EXPECT_EQ((*dead)[0].kind, "non_retryable");
}

// Only the newest 50 failures are kept: the inspector reads the counter's window, ID|N-49..ID|N.
TEST_F(InspectorTest, TaskShowReadsTheNewestFiftyFailures) {
  std::string id = MakeDead("t", "first");
  for (int k = 11; k <= 60; ++k) {
    Call({"HSET", keys().Errors(), id + "|" + std::to_string(k),
          "{\"attempt\":" + std::to_string(k) + ",\"kind\":\"error\",\"error\":\"e" +
              std::to_string(k) + "\"}"});
  }
  Call({"HSET", keys().Errors(), id, "60"});
  auto task = inspector_->GetTask(kNs, id);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  ASSERT_EQ(task->errors.size(), 50u);
  EXPECT_EQ(task->errors.front().attempt, 11);
  EXPECT_EQ(task->errors.back().error, "e60");
  auto dead = inspector_->ListDead(kNs, {});
  ASSERT_TRUE(dead.ok());
  ASSERT_EQ(dead->size(), 1u);
  EXPECT_EQ((*dead)[0].last_error, "e60");
}

TEST_F(InspectorTest, ReplayIsRefusedWhenTheStoredBodyCannotBecomeATask) {
  std::string id = MakeDead("t", "x");
  auto body = nlohmann::json::parse(redis_.String({"HGET", keys().Bodies(), id}));
  body["payload"] = "[1,2]";
  Call({"HSET", keys().Bodies(), id, body.dump()});
  auto refused = inspector_->ReplayDead(kNs, id);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kConflict);
  EXPECT_NE(refused.status().message().find("cannot replay " + id), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("payload"), std::string::npos);
  EXPECT_EQ(inspector_->GetTask(kNs, id)->state, TaskState::kDead);
  // A new payload fixes a bad payload.
  ASSERT_TRUE(inspector_->ReplayDead(kNs, id, std::string("{\"fixed\":true}")).ok());
  EXPECT_EQ(inspector_->GetTask(kNs, id)->state, TaskState::kQueued);

  // Nothing fixes a bad max_retry: refused with the reason, even with a new payload.
  std::string broken = MakeDead("u", "x");
  auto stored = nlohmann::json::parse(redis_.String({"HGET", keys().Bodies(), broken}));
  stored["max_retry"] = "many";
  Call({"HSET", keys().Bodies(), broken, stored.dump()});
  auto again = inspector_->ReplayDead(kNs, broken, std::string("{}"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kConflict);
  EXPECT_NE(again.status().message().find("max_retry"), std::string::npos)
      << again.status().message();
  DeadFilter all;
  all.limit = 0;
  auto batch = inspector_->ReplayDeadMatching(kNs, all);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->matched, 1u);
  EXPECT_EQ(batch->succeeded, 0u);
  ASSERT_EQ(batch->failed_ids.size(), 1u);
  EXPECT_EQ(batch->failed_ids[0], broken);
  EXPECT_NE(batch->failures[0].find("conflict"), std::string::npos) << batch->failures[0];
}

TEST_F(InspectorTest, ReplayRejectsAPayloadThatIsNotAnObject) {
  std::string id = MakeDead("t", "x");
  for (const char* bad : {"[1,2]", "not json", "\"text\""}) {
    auto r = inspector_->ReplayDead(kNs, id, std::string(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), "payload: must be a JSON object");
  }
  EXPECT_EQ(inspector_->GetTask(kNs, id)->state, TaskState::kDead);
}

TEST_F(InspectorTest, ReplayMatchingAndPurgeUseTheFilter) {
  std::string a1 = MakeDead("a", "e");
  std::string a2 = MakeDead("a", "e");
  std::string b1 = MakeDead("b", "e");
  std::string b2 = MakeDead("b", "e");

  DeadFilter only_a;
  only_a.type = "a";
  only_a.limit = 0;
  auto replayed = inspector_->ReplayDeadMatching(kNs, only_a);
  ASSERT_TRUE(replayed.ok()) << replayed.status().ToString();
  EXPECT_EQ(replayed->matched, 2u);
  EXPECT_EQ(replayed->succeeded, 2u);
  EXPECT_TRUE(replayed->failed_ids.empty());
  EXPECT_EQ(inspector_->GetTask(kNs, a1)->state, TaskState::kQueued);
  EXPECT_EQ(inspector_->GetTask(kNs, a2)->state, TaskState::kQueued);
  EXPECT_EQ(redis_.Integer({"XLEN", keys().Stream("a")}), 2);

  DeadFilter everything;
  everything.limit = 0;
  auto purged = inspector_->PurgeDead(kNs, everything);
  ASSERT_TRUE(purged.ok());
  EXPECT_EQ(purged->matched, 2u);
  EXPECT_EQ(purged->succeeded, 2u);
  EXPECT_EQ(inspector_->GetTask(kNs, b1)->state, TaskState::kDeleted);
  EXPECT_EQ(inspector_->GetTask(kNs, b2)->state, TaskState::kDeleted);
  EXPECT_EQ(redis_.Integer({"ZCARD", keys().Dead("b")}), 0);
  EXPECT_EQ(inspector_->ListDead(kNs, everything)->size(), 0u);
}

TEST_F(InspectorTest, EventWalksCrossChunksAndStopAtTheLimit) {
  std::string first = Enqueue("t");
  // One enqueue call per task: one events entry each.
  for (int i = 0; i < 1500; ++i) Enqueue("t");
  // One call for 500 tasks: one events entry that counts 500 times in the rates.
  std::vector<TaskRequest> many(500);
  for (auto& r : many) {
    r.ns = kNs;
    r.task_type = "t";
  }
  ASSERT_TRUE(client_->EnqueueMany(many).ok());

  auto task = inspector_->GetTask(kNs, first);  // its event is 1501 entries back: two chunks
  ASSERT_TRUE(task.ok());
  ASSERT_EQ(task->events.size(), 1u);
  EXPECT_EQ(task->events[0].to, "queued");
  EXPECT_TRUE(task->events_complete);
  auto q = inspector_->GetQueue(kNs, "t");
  EXPECT_EQ(q->rates.queued, 2001);
  EXPECT_TRUE(q->rates.exact);

  InspectorOptions small = Options();
  small.event_scan_limit = 100;
  Reconnect(small);
  auto cut = inspector_->GetTask(kNs, first);
  ASSERT_TRUE(cut.ok());
  EXPECT_TRUE(cut->events.empty());
  EXPECT_FALSE(cut->events_complete);
  auto scaled = inspector_->GetQueue(kNs, "t");
  EXPECT_FALSE(scaled->rates.exact);
  EXPECT_GE(scaled->rates.queued, 100);  // 100 events scaled up to a whole minute
}

TEST_F(InspectorTest, DelayedRetryingSplitIsExtrapolatedPastTheScanLimit) {
  for (int i = 0; i < 3; ++i) {
    Enqueue("t");
    auto d = Dequeue("t", "g", "c1", 1);
    ASSERT_EQ(Fail("t", "g", d[0], "e", "error", "c1", /*base_ms=*/1000), "retry");
  }
  for (int i = 0; i < 20; ++i) Enqueue("t", "{}", Delayed(3600));
  auto exact = inspector_->GetQueue(kNs, "t");
  EXPECT_EQ(exact->retrying, 3);
  EXPECT_EQ(exact->delayed, 20);
  EXPECT_TRUE(exact->scheduled_split_exact);

  InspectorOptions small = Options();
  small.scheduled_scan_limit = 10;  // the 10 earliest: the 3 retries and 7 first runs
  Reconnect(small);
  auto estimate = inspector_->GetQueue(kNs, "t");
  EXPECT_FALSE(estimate->scheduled_split_exact);
  EXPECT_EQ(estimate->delayed + estimate->retrying, 23);
  EXPECT_EQ(estimate->retrying, 7);  // 3/10 of 23
}

TEST_F(InspectorTest, WritesNeedTheFunctionsLibrary) {
  std::string id = MakeDead("t", "x");
  redis_.Command({"FUNCTION", "DELETE", std::string(internal::protocol::kLibrary)});
  Reconnect(Options());
  auto r = inspector_->ReplayDead(kNs, id);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kVersionMismatch);
  EXPECT_NE(r.status().message().find("baton init"), std::string::npos);
  EXPECT_EQ(inspector_->RescueStart(kNs, "t", "g").status().code(), StatusCode::kVersionMismatch);
  // Reading needs no library.
  EXPECT_TRUE(inspector_->GetTask(kNs, id).ok());
}

}  // namespace
}  // namespace baton::testing
