// Uses the installed public headers and library: a task id, a valid task, a refused one, and a
// cron schedule's next fire time (the time zone code comes from the package's dependencies).
#include <baton/client.h>
#include <baton/cron.h>
#include <baton/task.h>

#include <chrono>
#include <iostream>

int main() {
  baton::Task task;
  task.task_id = baton::NewTaskId();
  task.ns = "shop";
  task.task_type = "send_email";
  task.payload_json = R"({"to":"ada@example.com"})";
  task.created_at = 1722489600;
  if (baton::Status status = task.Validate(); !status.ok()) {
    std::cerr << "valid task refused: " << status.ToString() << "\n";
    return 1;
  }
  task.max_retry = 99;
  const baton::Status refused = task.Validate();
  if (refused.ok() || refused.code() != baton::StatusCode::kInvalidArgument) {
    std::cerr << "invalid task accepted\n";
    return 1;
  }
  // Links the Redis side too (hiredis comes from the package's dependencies).
  baton::ClientOptions options;
  options.redis.url = "not-a-url";
  if (baton::Client::Connect(options).ok()) return 1;
  // 2030-03-31 is Berlin's spring-forward day: 02:30 does not exist, the tick fires at 03:00 CEST.
  const std::chrono::sys_seconds after{std::chrono::seconds{1901131200}};  // 2030-03-30T20:00Z
  auto next = baton::NextFireTimes("30 2 * * *", "Europe/Berlin", after, 1);
  if (!next.ok() || next->size() != 1 || next->front().time_since_epoch().count() != 1901149200) {
    std::cerr << "cron preview failed: " << next.status().ToString() << "\n";
    return 1;
  }
  std::cout << "ok " << task.task_id << " / " << refused.message() << "\n";
  return 0;
}
