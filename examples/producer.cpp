// Example producer: enqueues the demo's tasks and prints what happened to each enqueue.
//   baton_example_producer redis://127.0.0.1:6379
#include <baton/client.h>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--help") {
    std::puts(
        "usage: baton_example_producer [REDIS_URL]\n"
        "Enqueues the demo's tasks in namespace order: send_notification, cancel_unpaid "
        "(delayed 3 s), flaky_inventory, charge_card (dies), and a duplicate id.");
    return 0;
  }
  baton::ClientOptions options;
  if (argc > 1) options.redis.url = argv[1];
  auto client = baton::Client::Connect(options);
  if (!client.ok()) {
    std::fprintf(stderr, "producer: %s\n", client.status().ToString().c_str());
    return 1;
  }

  auto request = [](const char* type, nlohmann::json payload) {
    baton::TaskRequest r;
    r.ns = "order";
    r.task_type = type;
    r.payload = std::move(payload);
    return r;
  };
  std::vector<baton::TaskRequest> requests;
  for (int i = 1; i <= 5; ++i) {
    requests.push_back(request("send_notification", {{"order_id", 12340 + i}, {"channel", "sms"}}));
  }
  // A cancellation delayed by 3 seconds (the seed's "cancel unpaid order after 30 minutes").
  requests.push_back(request("cancel_unpaid", {{"order_id", 12345}}));
  requests.back().options.delay_seconds = 3;
  // Fails on its first attempt, succeeds on the retry.
  requests.push_back(request("flaky_inventory", {{"sku", "A-1"}}));
  // Fails every time: exhausts max_retry and lands in the dead-letter queue.
  requests.push_back(request("charge_card", {{"card", "4000-0000-0000-0002"}}));
  requests.back().options.max_retry = 2;
  // The same task id twice: the second enqueue is reported as a duplicate, nothing is written.
  requests.push_back(request("send_notification", {{"order_id", 99}}));
  requests.back().options.task_id = "order-99-confirmation";
  requests.push_back(requests.back());

  auto results = (*client)->EnqueueMany(requests);
  if (!results.ok()) {
    std::fprintf(stderr, "producer: %s\n", results.status().ToString().c_str());
    return 1;
  }
  for (size_t i = 0; i < results->size(); ++i) {
    const auto& r = (*results)[i];
    const char* outcome = r.outcome == baton::EnqueueOutcome::kQueued      ? "queued"
                          : r.outcome == baton::EnqueueOutcome::kScheduled ? "scheduled"
                          : r.outcome == baton::EnqueueOutcome::kDuplicate ? "duplicate"
                                                                           : "unique_conflict";
    std::printf("enqueued %-18s %-40s %s\n", requests[i].task_type.c_str(), r.task_id.c_str(),
                outcome);
  }

  // Bad input gets a clear error that names the field, and nothing is written.
  baton::TaskRequest bad = request("send_notification", nlohmann::json::object());
  bad.options.max_retry = 99;
  auto rejected = (*client)->Enqueue(bad);
  std::printf("invalid task rejected: %s\n", rejected.status().ToString().c_str());
  return 0;
}
