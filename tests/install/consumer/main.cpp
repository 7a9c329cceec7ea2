// Uses the installed public headers and library: a task id, a valid task, a refused one.
#include <baton/client.h>
#include <baton/task.h>

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
  options.redis_url = "not-a-url";
  if (baton::Client::Connect(options).ok()) return 1;
  std::cout << "ok " << task.task_id << " / " << refused.message() << "\n";
  return 0;
}
