// Quick start, producer (docs/getting-started-cpp.md shows this file; CI builds it and runs it in
// tests/integration/quickstart_e2etest.cpp). Namespace "shop", task type "send_email".
//   baton_quickstart_producer [REDIS_URL]
#include <baton/client.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--help") {
    std::puts(
        "usage: baton_quickstart_producer [REDIS_URL]\n"
        "Enqueues one task (namespace shop, type send_email) and prints its id.");
    return 0;
  }
  // snippet-begin
  baton::ClientOptions options;
  if (argc > 1) options.redis.url = argv[1];  // default redis://127.0.0.1:6379
  auto client = baton::Client::Connect(options);
  if (!client.ok()) return std::fprintf(stderr, "%s\n", client.status().ToString().c_str()), 1;

  baton::TaskRequest request;
  request.ns = "shop";
  request.task_type = "send_email";
  request.payload = {{"to", "ada@example.com"}, {"template", "welcome"}};
  auto queued = (*client)->Enqueue(request);  // a UUIDv7 id, validated against the contract
  if (!queued.ok()) return std::fprintf(stderr, "%s\n", queued.status().ToString().c_str()), 1;
  std::printf("enqueued %s\n", queued->task_id.c_str());
  // snippet-end
  return 0;
}
