// End-to-end runs of the real `baton` binary against a real redis-server: init, enqueue and task
// show, queues, dlq replay with an edited payload (and a refused one), namespace settings, cron
// (with a bad cron line), work --exec (success, retry with stderr as the error, non-retryable
// exit, timeout, the lease), a rescue round trip, and what no input may break: invalid UTF-8 in
// stored errors, payload bytes in JSON output, one error path for bad option values, --at in ms.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "baton/inspector.h"
#include "broker/functions.h"
#include "broker/keys.h"
#include "harness/process.h"
#include "harness/redis_server.h"
#include "harness/work_entry.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr const char* kNs = "e2e";

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  json Json() const {
    auto j = json::parse(out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "stdout is not JSON: " << out << "\nstderr: " << err;
    return j;
  }
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = 20s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return done();
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override { redis_.LoadFunctions(); }

  // Runs `baton --redis URL args...` to completion; stdout and stderr captured apart.
  CliResult Run(std::vector<std::string> args, const std::string& stdin_text = "") {
    std::string out_path = dir_.path() + "/out", err_path = dir_.path() + "/err",
                in_path = dir_.path() + "/in";
    {
      std::ofstream in(in_path);
      in << stdin_text;
    }
    std::vector<std::string> argv = {BATON_CLI_PATH, "--redis", redis_.url()};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_t pid = fork();
    if (pid == 0) {
      int in = open(in_path.c_str(), O_RDONLY);
      int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(in, 0);
      dup2(out, 1);
      dup2(err, 2);
      std::vector<char*> cargs;
      for (auto& a : argv) cargs.push_back(a.data());
      cargs.push_back(nullptr);
      execv(cargs[0], cargs.data());
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CliResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = ReadFile(out_path);
    r.err = ReadFile(err_path);
    return r;
  }

  // A long-running `baton work --maintenance ...` (stdout and stderr to a log file). No batond
  // runs in these tests, so the worker promotes retries and reclaims leases itself.
  std::unique_ptr<Process> StartWorker(std::vector<std::string> args, const std::string& log) {
    std::vector<std::string> argv = {BATON_CLI_PATH, "--redis", redis_.url(), "work",
                                     "--maintenance"};
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<Process>(argv, dir_.path() + "/" + log);
  }

  static int Stop(Process& p) {
    p.Signal(SIGTERM);
    auto rc = p.Wait(30s);
    EXPECT_TRUE(rc.has_value()) << "worker did not stop on SIGTERM";
    return rc.value_or(-1);
  }

  std::string EnqueueId(std::vector<std::string> args) {
    std::vector<std::string> argv = {"enqueue", "--json", "--ns", kNs};
    argv.insert(argv.end(), args.begin(), args.end());
    CliResult r = Run(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json j = r.Json();
    return j.value("task_id", "");
  }

  json Task(const std::string& id) {
    CliResult r = Run({"task", "show", id, "--ns", kNs, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.Json();
  }

  std::string State(const std::string& id) {
    InspectorOptions o;
    o.redis.url = redis_.url();
    auto inspector = Inspector::Connect(o);
    if (!inspector.ok()) return "unreachable";
    auto t = (*inspector)->GetTask(kNs, id);
    return t.ok() ? std::string(TaskStateName(t->state)) : t.status().ToString();
  }

  // Dequeues `count` tasks for `consumer` of `group` (a worker that never acks), leased for 10 min.
  void Hold(const std::string& type, const std::string& group, const std::string& consumer,
            int count) {
    auto r = redis_.Command(
        internal::fn::Dequeue(kNs, type, group, consumer, static_cast<std::size_t>(count), 600000));
    ASSERT_EQ(r->type, REDIS_REPLY_ARRAY) << (r->str != nullptr ? r->str : "");
    ASSERT_EQ(r->element[0]->elements, static_cast<std::size_t>(9 * count));
  }

  // Fails the held task `id` with kind "error" (it dies when max_retry is 0).
  std::string FailHeld(const std::string& type, const std::string& id, const std::string& error) {
    internal::fn::FailArgs args;
    args.group = "g";
    args.consumer = "c1";
    args.id = id;
    std::string sid = Task(id)["stream_id"];
    args.sid = sid;
    args.kind = "error";
    args.message = error;
    args.base_ms = 2000;
    args.max_ms = 600000;
    auto failed = redis_.Command(internal::fn::Fail(kNs, type, args));
    EXPECT_EQ(failed->type, REDIS_REPLY_ARRAY);
    return failed->type == REDIS_REPLY_ARRAY ? failed->element[0]->str : "";
  }

  RedisServer redis_;
  TempDir dir_;
};

TEST_F(CliTest, InitLoadsTheLibraryAndEnqueueNeedsIt) {
  redis_.Command({"FUNCTION", "FLUSH"});
  CliResult before = Run({"enqueue", "--ns", kNs, "--type", "t"});
  EXPECT_EQ(before.exit_code, 4) << before.err;
  EXPECT_NE(before.err.find("run 'baton init'"), std::string::npos) << before.err;
  EXPECT_EQ(Run({"init", "--check"}).exit_code, 4);

  CliResult init = Run({"init"});
  EXPECT_EQ(init.exit_code, 0) << init.err;
  EXPECT_NE(init.out.find("version 2 loaded (was: none)"), std::string::npos) << init.out;
  CliResult again = Run({"init", "--json"});
  EXPECT_EQ(again.Json()["version"], "2");
  EXPECT_EQ(again.Json()["previous"], "2");
  EXPECT_EQ(Run({"init", "--check"}).exit_code, 0);
}

TEST_F(CliTest, EnqueueAndTaskShow) {
  std::string payload = R"({"to":"a@example.com","amount":12.50})";
  std::string id =
      EnqueueId({"--type", "email", "--payload", payload, "--max-retry", "5", "--timeout", "30"});
  ASSERT_FALSE(id.empty());
  json task = Task(id);
  EXPECT_EQ(task["state"], "queued");
  EXPECT_EQ(task["type"], "email");
  EXPECT_EQ(task["body"]["payload"], json::parse(payload));
  EXPECT_EQ(task["body"]["max_retry"], 5);
  EXPECT_EQ(task["body"]["execution_timeout"], 30);
  EXPECT_EQ(task["events"][0]["to"], "queued");
  // The payload bytes are stored exactly as given (12.50 is not re-encoded as 12.5).
  internal::Keys k(kNs);
  auto range = redis_.Command({"XRANGE", k.Stream("email"), "-", "+"});
  EXPECT_EQ(testing::WorkEntryFields(range->element[0]->element[1]).at("payload"), payload);

  // Human output.
  CliResult text = Run({"task", "show", id, "--ns", kNs});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("state      queued"), std::string::npos) << text.out;

  // Same id again: a duplicate, not an error. A held unique key: a conflict.
  CliResult dup = Run({"enqueue", "--json", "--ns", kNs, "--type", "email", "--id", id});
  EXPECT_EQ(dup.exit_code, 0);
  EXPECT_EQ(dup.Json()["outcome"], "duplicate");
  EXPECT_EQ(Run({"enqueue", "--ns", kNs, "--type", "x", "--unique-key", "k", "--unique-ttl", "60"})
                .exit_code,
            0);
  CliResult held =
      Run({"enqueue", "--ns", kNs, "--type", "x", "--unique-key", "k", "--unique-ttl", "60"});
  EXPECT_EQ(held.exit_code, 4);

  // Delayed, and a whole document from stdin.
  CliResult delayed = Run({"enqueue", "--json", "--ns", kNs, "--type", "email", "--delay", "600"});
  EXPECT_EQ(delayed.Json()["outcome"], "scheduled");
  CliResult doc = Run(
      {"enqueue", "--json", "--file", "-"},
      R"({"task_id":"doc-1","namespace":"e2e","task_type":"email","payload":{},)"
      R"("max_retry":1,"delay_seconds":0,"created_at":1722489600,"trace":{"traceparent":"00-abc"}})");
  EXPECT_EQ(doc.exit_code, 0) << doc.err;
  EXPECT_EQ(Task("doc-1")["body"]["extra"]["trace"]["traceparent"], "00-abc");

  // Errors: unknown task 3, bad value 1, bad command line 2.
  CliResult missing = Run({"task", "show", "nope", "--ns", kNs});
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("not_found"), std::string::npos);
  CliResult bad = Run({"enqueue", "--ns", kNs, "--type", "email", "--payload", "[1]"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("payload: must be a JSON object"), std::string::npos) << bad.err;
  EXPECT_EQ(Run({"enqueue", "--type", "email"}).exit_code, 2);
  EXPECT_EQ(
      Run({"enqueue", "--ns", kNs, "--type", "t", "--delay", "5", "--at", "1900000000"}).exit_code,
      2);
  EXPECT_EQ(Run({"no-such-command"}).exit_code, 2);
  CliResult json_error = Run({"task", "show", "nope", "--ns", kNs, "--json"});
  EXPECT_EQ(json_error.Json()["error"]["code"], "not_found");
  EXPECT_EQ(json_error.Json()["error"]["exit_code"], 3);

  // Cancel.
  std::string cancel_me = EnqueueId({"--type", "email"});
  EXPECT_EQ(Run({"task", "cancel", cancel_me, "--ns", kNs}).exit_code, 0);
  EXPECT_EQ(Task(cancel_me)["state"], "cancelled");
  EXPECT_EQ(Run({"task", "cancel", cancel_me, "--ns", kNs}).exit_code, 3);
}

TEST_F(CliTest, QueuesJson) {
  EnqueueId({"--type", "a"});
  EnqueueId({"--type", "a"});
  EnqueueId({"--type", "a", "--delay", "600"});
  EnqueueId({"--type", "b"});
  CliResult r = Run({"queues", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json queues = r.Json()["queues"];
  ASSERT_EQ(queues.size(), 2u);
  EXPECT_EQ(queues[0]["namespace"], kNs);
  EXPECT_EQ(queues[0]["type"], "a");
  EXPECT_EQ(queues[0]["ready"], 2);
  EXPECT_EQ(queues[0]["delayed"], 1);
  EXPECT_EQ(queues[0]["in_flight"], 0);
  EXPECT_EQ(queues[0]["rate"]["queued"], 2);
  EXPECT_EQ(queues[1]["type"], "b");
  CliResult text = Run({"queues", "--ns", kNs});
  EXPECT_NE(text.out.find("NAMESPACE"), std::string::npos);
  Hold("a", "g", "c1", 1);
  CliResult pending = Run({"pending", "--ns", kNs, "--type", "a", "--json"});
  EXPECT_EQ(pending.Json()["groups"][0]["consumers"][0]["name"], "c1");
}

TEST_F(CliTest, PartitionsSpreadANamespaceAndQueuesDoctorAndTaskShowCoverThem) {
  CliResult shown = Run({"partitions", kNs});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find(": 1 partition ("), std::string::npos) << shown.out;
  CliResult grown = Run({"partitions", kNs, "3", "--json"});
  ASSERT_EQ(grown.exit_code, 0) << grown.err;
  EXPECT_EQ(grown.Json()["partitions"], 3);
  EXPECT_EQ(grown.Json()["storage_namespaces"][2], std::string(kNs) + ":2");
  CliResult shrink = Run({"partitions", kNs, "2"});
  EXPECT_NE(shrink.exit_code, 0);
  EXPECT_NE(shrink.err.find("count: must not be below the current 3"), std::string::npos)
      << shrink.err;
  EXPECT_NE(Run({"partitions", kNs, "0"}).exit_code, 0);
  EXPECT_NE(Run({"partitions", kNs, "abc"}).exit_code, 0);

  std::vector<std::string> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(EnqueueId({"--type", "spread"}));
  json queues = Run({"queues", "--ns", kNs, "--json"}).Json()["queues"];
  ASSERT_EQ(queues.size(), 3u) << queues.dump();
  long long ready = 0;
  for (const json& q : queues) {
    EXPECT_EQ(q["namespace"].get<std::string>().rfind(kNs, 0), 0u) << q.dump();
    ready += q["ready"].get<long long>();
  }
  EXPECT_EQ(ready, 12);
  // Each id is found through the namespace, wherever its partition is.
  for (const std::string& id : ids) EXPECT_EQ(Task(id)["state"], "queued") << id;
  json doctor = Run({"doctor", "--ns", kNs, "--type", "spread", "--json"}).Json();
  EXPECT_EQ(doctor["partitions"].size(), 3u) << doctor.dump();
  EXPECT_EQ(Run({"task", "cancel", ids[5], "--ns", kNs}).exit_code, 0);
  EXPECT_EQ(Task(ids[5])["state"], "cancelled");
}

TEST_F(CliTest, DlqReplayWithAnEditedPayload) {
  std::string id =
      EnqueueId({"--type", "mail", "--payload", R"({"to":"nobody"})", "--max-retry", "0"});
  Hold("mail", "g", "c1", 1);
  ASSERT_EQ(FailHeld("mail", id, "no such mailbox"), "dead");

  CliResult list = Run({"dlq", "list", "--ns", kNs, "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  ASSERT_EQ(list.Json()["dead"].size(), 1u);
  EXPECT_EQ(list.Json()["dead"][0]["task_id"], id);
  EXPECT_EQ(list.Json()["dead"][0]["last_error"], "no such mailbox");
  EXPECT_EQ(Run({"dlq", "list", "--ns", kNs, "--type", "other", "--json"}).Json()["dead"].size(),
            0u);
  EXPECT_EQ(Run({"dlq", "list", "--ns", kNs, "--since", "1h", "--json"}).Json()["dead"].size(), 1u);
  EXPECT_EQ(Run({"dlq", "list", "--ns", kNs, "--until", "1h", "--json"}).Json()["dead"].size(), 0u);
  EXPECT_EQ(Run({"dlq", "list", "--ns", kNs, "--since", "soon"}).exit_code, 1);
  EXPECT_EQ(Run({"dlq", "show", id, "--ns", kNs}).exit_code, 0);

  // --payload with a filter is a usage error; replay needs an id, a filter or --all.
  EXPECT_EQ(Run({"dlq", "replay", "--ns", kNs, "--all", "--payload", "{}"}).exit_code, 2);
  EXPECT_EQ(Run({"dlq", "replay", "--ns", kNs}).exit_code, 2);
  EXPECT_EQ(Run({"dlq", "purge", "--ns", kNs}).exit_code, 2);

  CliResult replay = Run(
      {"dlq", "replay", id, "--ns", kNs, "--payload", R"({"to":"someone@example.com"})", "--json"});
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  json task = Task(id);
  EXPECT_EQ(task["state"], "queued");
  EXPECT_EQ(task["stream_id"], replay.Json()["stream_id"]);
  EXPECT_EQ(task["body"]["payload"]["to"], "someone@example.com");
  EXPECT_EQ(task["errors"][0]["error"], "no such mailbox");
  // Not dead any more.
  EXPECT_EQ(Run({"dlq", "replay", id, "--ns", kNs}).exit_code, 4);
  EXPECT_EQ(Run({"dlq", "delete", "ghost", "--ns", kNs}).exit_code, 3);
}

TEST_F(CliTest, DlqReplayOfABodyThatCannotBecomeATaskIsRefused) {
  std::string id = EnqueueId({"--type", "mail", "--max-retry", "0"});
  Hold("mail", "g", "c1", 1);
  ASSERT_EQ(FailHeld("mail", id, "boom"), "dead");
  internal::Keys k(kNs);
  json body = json::parse(redis_.String({"HGET", k.Bodies(), id}));
  body["payload"] = "not json";
  redis_.Command({"HSET", k.Bodies(), id, body.dump()});

  CliResult refused = Run({"dlq", "replay", id, "--ns", kNs});
  EXPECT_EQ(refused.exit_code, 4);
  EXPECT_NE(refused.err.find("baton dlq replay: conflict: cannot replay " + id), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("replay it with a corrected --payload"), std::string::npos)
      << refused.err;
  CliResult as_json = Run({"dlq", "replay", id, "--ns", kNs, "--json"});
  EXPECT_EQ(as_json.Json()["error"]["code"], "conflict");
  EXPECT_EQ(as_json.Json()["error"]["exit_code"], 4);
  EXPECT_NE(as_json.Json()["error"]["hint"].get<std::string>().find("baton dlq show " + id),
            std::string::npos);
  EXPECT_EQ(Task(id)["state"], "dead");

  CliResult fixed = Run({"dlq", "replay", id, "--ns", kNs, "--payload", R"({"ok":1})"});
  EXPECT_EQ(fixed.exit_code, 0) << fixed.err;
  EXPECT_EQ(Task(id)["state"], "queued");
}

TEST_F(CliTest, ConfigGetAndSetNamespaceSettings) {
  CliResult get = Run({"config", "get", kNs, "--json"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  json settings = get.Json()["settings"];
  EXPECT_EQ(settings["lease_ms"], 30000);
  EXPECT_EQ(settings["events_maxlen"], 100000);
  EXPECT_EQ(settings["done_retention_s"], 86400);
  EXPECT_EQ(settings["dlq_max"], 100000);
  EXPECT_EQ(settings["dlq_retention_s"], 2592000);
  EXPECT_EQ(get.Json()["defaults"], settings);

  CliResult set = Run({"config", "set", kNs, "lease_ms", "60000", "dlq_max", "10", "--json"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(set.Json()["settings"]["lease_ms"], 60000);
  EXPECT_EQ(set.Json()["settings"]["dlq_max"], 10);
  EXPECT_EQ(redis_.String({"HGET", internal::Keys(kNs).Config(), "lease_ms"}), "60000");

  CliResult text = Run({"config", "get", kNs});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("lease_ms"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("60000"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(default)"), std::string::npos) << text.out;

  // Out of range: the usual error line, nothing written (all or nothing).
  CliResult bad = Run({"config", "set", kNs, "dlq_max", "20", "lease_ms", "5"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("baton config set: invalid_argument:"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("lease_ms: must be an integer 1000..86400000"), std::string::npos)
      << bad.err;
  EXPECT_EQ(Run({"config", "get", kNs, "--json"}).Json()["settings"]["dlq_max"], 10);
  CliResult unknown = Run({"config", "set", kNs, "nope", "1", "--json"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.Json()["error"]["code"], "invalid_argument");
  EXPECT_NE(unknown.Json()["error"]["message"].get<std::string>().find("nope: is not a setting"),
            std::string::npos);

  // '' goes back to the default; a setting without a value is a usage error.
  CliResult reset = Run({"config", "set", kNs, "lease_ms", "", "--json"});
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_EQ(reset.Json()["settings"]["lease_ms"], 30000);
  EXPECT_EQ(Run({"config", "set", kNs, "lease_ms"}).exit_code, 2);
  EXPECT_EQ(Run({"config", "get"}).exit_code, 2);
  EXPECT_EQ(Run({"config", "get", "bad ns"}).exit_code, 1);

  // baton work takes 0 (the namespace's lease) or 1000..86400000 ms: 500 is a bad value (exit 1).
  CliResult short_lease =
      Run({"work", "--ns", kNs, "--type", "t", "--exec", "true", "--lease-ms", "500"});
  EXPECT_EQ(short_lease.exit_code, 1);
  EXPECT_EQ(short_lease.err.rfind("baton work: invalid_argument: --lease-ms: ", 0), 0u)
      << short_lease.err;

  // The namespace's lease is the one a worker without --lease-ms gets.
  Run({"config", "set", kNs, "lease_ms", "45000"});
  std::string id = EnqueueId({"--type", "leased"});
  auto before = redis_.Command({"TIME"});
  long long now_ms = std::stoll(before->element[0]->str) * 1000;
  auto r = redis_.Command(internal::fn::Dequeue(kNs, "leased", "g", "c1", 1, 0));
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  json task = Task(id);
  ASSERT_TRUE(task["lease_deadline_ms"].is_number()) << task;
  EXPECT_GE(task["lease_deadline_ms"].get<long long>(), now_ms + 44000);
  EXPECT_LE(task["lease_deadline_ms"].get<long long>(), now_ms + 47000);
}

TEST_F(CliTest, CronAddListNextRemove) {
  redisContext* sub = redisConnect("127.0.0.1", redis_.port());
  ASSERT_TRUE(sub != nullptr && sub->err == 0);
  freeReplyObject(redisCommand(sub, "SUBSCRIBE baton:cron:changed"));

  CliResult add =
      Run({"cron", "add", "nightly", "--schedule", "30 2 * * *", "--tz", "Europe/Berlin", "--ns",
           kNs, "--type", "report", "--payload", R"({"kind":"daily"})", "--missed", "run_once"});
  ASSERT_EQ(add.exit_code, 0) << add.err;
  EXPECT_NE(add.out.find("added cron job nightly: next run at"), std::string::npos) << add.out;
  // The change was announced to running schedulers.
  redisReply* message = nullptr;
  ASSERT_EQ(redisGetReply(sub, reinterpret_cast<void**>(&message)), REDIS_OK);
  ASSERT_EQ(message->type, REDIS_REPLY_ARRAY);
  EXPECT_EQ(std::string(message->element[2]->str), "nightly");
  freeReplyObject(message);
  redisFree(sub);

  json stored = json::parse(redis_.String({"HGET", "baton:cron", "nightly"}));
  EXPECT_EQ(stored["schedule"], "30 2 * * *");
  EXPECT_EQ(stored["timezone"], "Europe/Berlin");
  EXPECT_EQ(stored["missed"], "run_once");

  CliResult list = Run({"cron", "list", "--json"});
  ASSERT_EQ(list.Json()["jobs"].size(), 1u);
  EXPECT_EQ(list.Json()["jobs"][0]["name"], "nightly");

  CliResult next = Run({"cron", "next", "nightly", "-n", "3", "--json"});
  ASSERT_EQ(next.exit_code, 0) << next.err;
  json times = next.Json()["next"];
  ASSERT_EQ(times.size(), 3u);
  EXPECT_LT(times[0]["unix"].get<std::int64_t>(), times[1]["unix"].get<std::int64_t>());
  EXPECT_NE(times[0]["local"].get<std::string>().find("02:30:00"), std::string::npos) << times;

  // Adding it again needs --replace; disable / enable keep the definition.
  EXPECT_EQ(
      Run({"cron", "add", "nightly", "--schedule", "@daily", "--ns", kNs, "--type", "r"}).exit_code,
      4);
  EXPECT_EQ(Run({"cron", "disable", "nightly"}).exit_code, 0);
  EXPECT_EQ(json::parse(redis_.String({"HGET", "baton:cron", "nightly"}))["enabled"], false);
  EXPECT_EQ(Run({"cron", "enable", "nightly"}).exit_code, 0);

  // A bad cron line: exit 1, the message names the field.
  CliResult bad =
      Run({"cron", "add", "broken", "--schedule", "61 * * * *", "--ns", kNs, "--type", "report"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("schedule: minute"), std::string::npos) << bad.err;
  EXPECT_EQ(redis_.Integer({"HEXISTS", "baton:cron", "broken"}), 0);
  CliResult zone = Run({"cron", "add", "z", "--schedule", "@hourly", "--tz", "Mars/Base", "--ns",
                        kNs, "--type", "report"});
  EXPECT_EQ(zone.exit_code, 1);
  EXPECT_NE(zone.err.find("timezone"), std::string::npos) << zone.err;

  EXPECT_EQ(Run({"cron", "rm", "nightly"}).exit_code, 0);
  EXPECT_EQ(Run({"cron", "rm", "nightly"}).exit_code, 3);
  EXPECT_EQ(Run({"cron", "next", "nightly"}).exit_code, 3);
}

TEST_F(CliTest, WorkExecRunsTheCommandPerTask) {
  std::string out = dir_.path() + "/payloads";
  ASSERT_EQ(mkdir(out.c_str(), 0755), 0);
  std::string a = EnqueueId({"--type", "job", "--payload", R"({"n":1})"});
  std::string b = EnqueueId({"--type", "job", "--payload", R"({"n":2, "s":"x y"})"});
  auto worker = StartWorker(
      {"--ns", kNs, "--type", "job", "--concurrency", "2", "--exec",
       "cat > " + out +
           "/$BATON_TASK_ID.json; echo \"$BATON_TASK_TYPE $BATON_ATTEMPT $BATON_NAMESPACE\" "
           "> " +
           out + "/$BATON_TASK_ID.env; printf '%s' \"$BATON_TASK\" > " + out +
           "/$BATON_TASK_ID.task"},
      "work.log");
  ASSERT_TRUE(WaitUntil([&] { return State(a) == "done" && State(b) == "done"; }))
      << ReadFile(dir_.path() + "/work.log");
  EXPECT_EQ(ReadFile(out + "/" + a + ".json"), R"({"n":1})");
  EXPECT_EQ(ReadFile(out + "/" + b + ".json"), R"({"n":2, "s":"x y"})");
  EXPECT_EQ(ReadFile(out + "/" + a + ".env"), "job 1 e2e\n");
  json doc = json::parse(ReadFile(out + "/" + b + ".task"));
  EXPECT_EQ(doc["task_id"], b);
  EXPECT_EQ(doc["payload"]["s"], "x y");
  EXPECT_EQ(Stop(*worker), 0);
}

TEST_F(CliTest, WorkExecFailuresRetryWithStderrAsTheError) {
  std::string failing = EnqueueId({"--type", "flaky", "--max-retry", "1"});
  std::string fatal = EnqueueId({"--type", "flaky", "--payload", R"({"fatal":true})"});
  auto worker = StartWorker({"--ns", kNs, "--type", "flaky", "--exec",
                             "if grep -q fatal; then echo 'bad input' >&2; exit 65; fi; "
                             "echo \"boom on attempt $BATON_ATTEMPT\" >&2; exit 3"},
                            "work.log");
  // Two attempts (max_retry 1), the retry after the default 2 s backoff, then dead.
  ASSERT_TRUE(WaitUntil([&] { return State(failing) == "dead" && State(fatal) == "dead"; }, 30s))
      << ReadFile(dir_.path() + "/work.log");
  EXPECT_EQ(Stop(*worker), 0);
  json task = Task(failing);
  ASSERT_EQ(task["errors"].size(), 2u);
  EXPECT_EQ(task["errors"][0]["kind"], "error");
  EXPECT_NE(task["errors"][0]["error"].get<std::string>().find("exit status 3: boom on attempt 1"),
            std::string::npos)
      << task["errors"];
  EXPECT_NE(task["errors"][1]["error"].get<std::string>().find("boom on attempt 2"),
            std::string::npos);
  json dead = Task(fatal);
  ASSERT_EQ(dead["errors"].size(), 1u);  // no retry despite max_retry 3
  EXPECT_EQ(dead["errors"][0]["kind"], "non_retryable");
  EXPECT_NE(dead["errors"][0]["error"].get<std::string>().find("bad input"), std::string::npos);
}

TEST_F(CliTest, WorkExecStopsACommandAtTheExecutionTimeout) {
  std::string marker = dir_.path() + "/terminated";
  std::string id = EnqueueId({"--type", "slow", "--timeout", "1", "--max-retry", "0"});
  auto worker = StartWorker({"--ns", kNs, "--type", "slow", "--exec",
                             "trap 'echo TERM > " + marker + "; exit 143' TERM; sleep 60 & wait"},
                            "work.log");
  ASSERT_TRUE(WaitUntil([&] { return State(id) == "dead"; }, 30s))
      << ReadFile(dir_.path() + "/work.log");
  EXPECT_EQ(Task(id)["errors"][0]["kind"], "timeout");
  EXPECT_TRUE(WaitUntil([&] { return ReadFile(marker) == "TERM\n"; }, 10s));
  EXPECT_EQ(Stop(*worker), 0);
}

TEST_F(CliTest, RescueRoundTripNothingSkippedNothingTwice) {
  std::vector<std::string> backlog;
  for (int i = 0; i < 5; ++i) backlog.push_back(EnqueueId({"--type", "r"}));
  Hold("r", "baton", "broken-consumer", 2);  // the broken group holds two and never acks

  CliResult start =
      Run({"rescue", "start", "--ns", kNs, "--type", "r", "--group", "baton", "--json"});
  ASSERT_EQ(start.exit_code, 0) << start.err;
  EXPECT_EQ(start.Json()["rescue_group"], "baton.rescue");
  EXPECT_EQ(start.Json()["undelivered"], 5);
  EXPECT_EQ(Run({"rescue", "start", "--ns", kNs, "--type", "r", "--group", "baton"}).exit_code, 4);
  CliResult early = Run({"rescue", "finish", "--ns", kNs, "--type", "r"});
  EXPECT_EQ(early.exit_code, 4);
  EXPECT_NE(early.err.find("not done"), std::string::npos) << early.err;

  std::string rescue_log = dir_.path() + "/rescue.ids";
  auto rescuer = StartWorker({"--ns", kNs, "--type", "r", "--group", "baton.rescue", "--exec",
                              "echo $BATON_TASK_ID >> " + rescue_log},
                             "rescue.log");
  ASSERT_TRUE(WaitUntil([&] {
    for (const auto& id : backlog) {
      if (State(id) != "done") return false;
    }
    return true;
  })) << ReadFile(dir_.path() + "/rescue.log");
  EXPECT_EQ(Stop(*rescuer), 0);
  CliResult status = Run({"rescue", "status", "--ns", kNs, "--type", "r", "--json"});
  EXPECT_EQ(status.Json()["ready_to_finish"], true) << status.out;

  CliResult finish = Run({"rescue", "finish", "--ns", kNs, "--type", "r", "--json"});
  ASSERT_EQ(finish.exit_code, 0) << finish.err;
  EXPECT_EQ(finish.Json()["acked_in_group"], 2);

  std::vector<std::string> fresh;
  for (int i = 0; i < 3; ++i) fresh.push_back(EnqueueId({"--type", "r"}));
  std::string main_log = dir_.path() + "/main.ids";
  auto healthy = StartWorker({"--ns", kNs, "--type", "r", "--group", "baton", "--exec",
                              "echo $BATON_TASK_ID >> " + main_log},
                             "main.log");
  ASSERT_TRUE(WaitUntil([&] {
    for (const auto& id : fresh) {
      if (State(id) != "done") return false;
    }
    return true;
  })) << ReadFile(dir_.path() + "/main.log");
  std::this_thread::sleep_for(500ms);  // give a wrong second delivery the chance to show up
  EXPECT_EQ(Stop(*healthy), 0);

  std::vector<std::string> rescued = Lines(ReadFile(rescue_log));
  std::vector<std::string> resumed = Lines(ReadFile(main_log));
  EXPECT_EQ(rescued.size(), backlog.size());
  EXPECT_EQ(std::set<std::string>(rescued.begin(), rescued.end()),
            std::set<std::string>(backlog.begin(), backlog.end()));
  EXPECT_EQ(resumed.size(), fresh.size());
  EXPECT_EQ(std::set<std::string>(resumed.begin(), resumed.end()),
            std::set<std::string>(fresh.begin(), fresh.end()));
  EXPECT_EQ(Run({"rescue", "status", "--ns", kNs, "--type", "r"}).exit_code, 3);
}

TEST_F(CliTest, UnreachableRedisSaysWhatToDoWithoutThePassword) {
  int port = FreeLoopbackPort();  // nothing listens there
  std::string url = "redis://user:s3cret@127.0.0.1:" + std::to_string(port);
  pid_t pid = fork();
  std::string err_path = dir_.path() + "/unreachable.err";
  if (pid == 0) {
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(err, 2);
    execl(BATON_CLI_PATH, BATON_CLI_PATH, "--redis", url.c_str(), "queues", nullptr);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 1);
  std::string err = ReadFile(err_path);
  EXPECT_NE(err.find("unavailable"), std::string::npos) << err;
  EXPECT_NE(err.find("Set --redis or BATON_REDIS_URL"), std::string::npos) << err;
  EXPECT_NE(err.find("user:***@127.0.0.1"), std::string::npos) << err;
  EXPECT_EQ(err.find("s3cret"), std::string::npos) << err;
}

TEST_F(CliTest, DoctorExplainsInPlainWords) {
  std::string id = EnqueueId({"--type", "report", "--delay", "3600"});
  CliResult d = Run({"doctor", id, "--ns", kNs});
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("delay_seconds=3600: did you mean 0?"), std::string::npos) << d.out;
  CliResult j = Run({"doctor", id, "--ns", kNs, "--json"});
  EXPECT_EQ(j.Json()["code"], "scheduled");
  EXPECT_EQ(Run({"doctor", "unknown-task", "--ns", kNs}).exit_code, 3);
  EnqueueId({"--type", "nobody"});
  CliResult q = Run({"doctor", "--ns", kNs, "--type", "nobody", "--json"});
  EXPECT_EQ(q.Json()["findings"][0]["code"], "no_group");
  EXPECT_EQ(Run({"doctor", "--ns", kNs}).exit_code, 2);
}

// True when `text` is well-formed UTF-8.
bool ValidUtf8(const std::string& text) {
  try {
    (void)json(text).dump();
    return true;
  } catch (const json::exception&) {
    return false;
  }
}

TEST_F(CliTest, InvalidUtf8InErrorsNeverAbortsInspection) {
  // A worker's stderr with a stray byte, and one cut in the middle of a multi-byte character.
  std::string id = EnqueueId({"--type", "mail", "--max-retry", "0"});
  Hold("mail", "g", "c1", 1);
  ASSERT_EQ(FailHeld("mail", id, "\xff oops caf\xc3"), "dead");
  // A failure written by another client (field ID|1 of the errors hash, docs/keyspace.md):
  // invalid bytes inside the JSON strings.
  std::string other = EnqueueId({"--type", "mail", "--max-retry", "0"});
  Hold("mail", "g", "c1", 1);
  ASSERT_EQ(FailHeld("mail", other, "fine"), "dead");
  internal::Keys k(kNs);
  redis_.Command({"HSET", k.Errors(), other + "|1",
                  "{\"attempt\":1,\"kind\":\"error\",\"error\":\"\xff bad \xe2\x82\",\"stack\":"
                  "\"at \xc0\\nline\",\"worker\":\"w\xfe\",\"at_ms\":1722489600000}"});

  for (const std::string& task : {id, other}) {
    for (const char* command : {"task", "dlq"}) {
      CliResult js = Run({command, "show", task, "--ns", kNs, "--json"});
      ASSERT_EQ(js.exit_code, 0) << command << " " << js.err;
      json doc = js.Json();
      ASSERT_EQ(doc["errors"].size(), 1u) << js.out;
      EXPECT_EQ(doc["errors"][0]["kind"], "error");
      EXPECT_NE(doc["errors"][0]["error"].get<std::string>().find(task == id ? "oops" : "bad"),
                std::string::npos);
      EXPECT_NE(doc["errors"][0]["error"].get<std::string>().find("\xef\xbf\xbd"),
                std::string::npos)
          << "invalid bytes are shown as U+FFFD";
      CliResult text = Run({command, "show", task, "--ns", kNs});
      ASSERT_EQ(text.exit_code, 0) << command << " " << text.err;
      EXPECT_TRUE(ValidUtf8(text.out)) << text.out;
      EXPECT_NE(text.out.find(task == id ? "oops" : "bad"), std::string::npos) << text.out;
    }
  }
  CliResult list = Run({"dlq", "list", "--ns", kNs, "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const json listed = list.Json();  // kept alive: the loop walks into it
  ASSERT_EQ(listed["dead"].size(), 2u);
  for (const json& d : listed["dead"]) {
    EXPECT_EQ(d["kind"], "error") << d;
    EXPECT_NE(d["last_error"].get<std::string>().find(d["task_id"] == id ? "oops" : "bad"),
              std::string::npos)
        << d;
  }
  CliResult list_text = Run({"dlq", "list", "--ns", kNs});
  ASSERT_EQ(list_text.exit_code, 0) << list_text.err;
  EXPECT_TRUE(ValidUtf8(list_text.out)) << list_text.out;
  EXPECT_NE(list_text.out.find("oops"), std::string::npos) << list_text.out;
  EXPECT_NE(list_text.out.find("bad"), std::string::npos) << list_text.out;
}

TEST_F(CliTest, JsonOutputShowsThePayloadBytesAsStored) {
  const std::string payload = R"({"big":123456789012345678901234567890,"d":1.10,"neg":-0})";
  std::string id = EnqueueId({"--type", "num", "--payload", payload, "--max-retry", "0"});
  ASSERT_FALSE(id.empty());
  CliResult shown = Run({"task", "show", id, "--ns", kNs, "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("\"payload\": " + payload), std::string::npos) << shown.out;
  EXPECT_EQ(shown.Json()["body"]["max_retry"], 0);
  CliResult text = Run({"task", "show", id, "--ns", kNs});
  EXPECT_NE(text.out.find("payload    " + payload + "\n"), std::string::npos) << text.out;

  Hold("num", "g", "c1", 1);
  ASSERT_EQ(FailHeld("num", id, "boom"), "dead");
  CliResult dead = Run({"dlq", "show", id, "--ns", kNs, "--json"});
  ASSERT_EQ(dead.exit_code, 0) << dead.err;
  EXPECT_NE(dead.out.find("\"payload\": " + payload), std::string::npos) << dead.out;

  // A stored payload that is not JSON (a foreign writer) is shown as a JSON string.
  internal::Keys k(kNs);
  json body = json::parse(redis_.String({"HGET", k.Bodies(), id}));
  body["payload"] = "not json \"quoted\"";
  redis_.Command({"HSET", k.Bodies(), id, body.dump()});
  CliResult foreign = Run({"dlq", "show", id, "--ns", kNs, "--json"});
  ASSERT_EQ(foreign.exit_code, 0) << foreign.err;
  EXPECT_EQ(foreign.Json()["body"]["payload"], "not json \"quoted\"");
}

TEST_F(CliTest, AForeignEntrysFieldsAreKeptAndShownInTheDlq) {
  // Another system XADDs into a work stream with its own fields, one of them not UTF-8.
  const std::string stream = internal::Keys(kNs).Stream("foreign");
  auto added = redis_.Command(
      {"XADD", stream, "*", "order_id", "42", "note", std::string("caf\xc3\xa9 \xff\xfe")});
  ASSERT_EQ(added->type, REDIS_REPLY_STRING);
  const std::string sid = added->str;
  // The dequeue delivers nothing: it buries the entry, which is not a Baton task.
  auto dequeued = redis_.Command(internal::fn::Dequeue(kNs, "foreign", "g", "c1", 10, 0));
  ASSERT_EQ(dequeued->type, REDIS_REPLY_ARRAY);
  EXPECT_EQ(dequeued->element[0]->elements, 0u);
  const std::string id = "malformed-" + sid;
  CliResult shown = Run({"dlq", "show", id, "--ns", kNs, "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  json raw = shown.Json()["body"]["raw"];
  EXPECT_EQ(raw["order_id"], "42") << shown.out;
  EXPECT_EQ(raw["note"].get<std::string>().rfind("caf\xc3\xa9 ", 0), 0u) << shown.out;
  CliResult text = Run({"dlq", "show", id, "--ns", kNs});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("raw fields (the malformed entry as its writer sent it):\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  order_id = 42\n"), std::string::npos) << text.out;
  EXPECT_NE(Run({"task", "show", id, "--ns", kNs}).out.find("  order_id = 42\n"),
            std::string::npos);
  // Replaying it cannot make a valid task: refused with the hint, the task stays dead.
  CliResult replay = Run({"dlq", "replay", id, "--ns", kNs});
  EXPECT_EQ(replay.exit_code, 4) << replay.err;
}

TEST_F(CliTest, PayloadFileEnqueuesPayloadsTooBigForAnArgument) {
  // 300 KiB: more than one command-line argument may hold (128 KiB), within the contract's 512 KiB.
  const std::string payload =
      R"({"d":1.10,"blob":")" + std::string(300 * 1024, 'x') + R"(","big":123456789012345678901})";
  const std::string path = dir_.path() + "/payload.json";
  std::ofstream(path, std::ios::binary) << payload;
  CliResult queued =
      Run({"enqueue", "--ns", kNs, "--type", "big", "--payload-file", path, "--json"});
  ASSERT_EQ(queued.exit_code, 0) << queued.err;
  const std::string sid = queued.Json()["stream_id"];
  auto entry = redis_.Command({"XRANGE", internal::Keys(kNs).Stream("big"), sid, sid});
  ASSERT_EQ(entry->elements, 1u);
  const redisReply* fields = entry->element[0]->element[1];
  ASSERT_EQ(fields->elements, 4u);
  EXPECT_EQ(std::string(fields->element[3]->str, fields->element[3]->len), payload);

  // From stdin, and refused like --payload when it is not an object.
  CliResult piped = Run({"enqueue", "--ns", kNs, "--type", "big", "--payload-file", "-"}, "[1]");
  EXPECT_EQ(piped.exit_code, 1);
  EXPECT_NE(piped.err.find("payload: must be a JSON object"), std::string::npos) << piped.err;
  CliResult missing =
      Run({"enqueue", "--ns", kNs, "--type", "big", "--payload-file", dir_.path() + "/nope"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("payload_file: cannot read"), std::string::npos) << missing.err;
  EXPECT_EQ(
      Run({"enqueue", "--ns", kNs, "--type", "big", "--payload", "{}", "--payload-file", path})
          .exit_code,
      2);
}

TEST_F(CliTest, CronNextPreviewsAScheduleAcrossDstWithoutStoringIt) {
  // Berlin springs forward on 2030-03-31: the 02:30 run fires once, at 03:00 CEST.
  CliResult dst = Run({"cron", "next", "--schedule", "30 2 * * *", "--tz", "Europe/Berlin",
                       "--from", "2030-03-29", "-n", "3", "--json"});
  ASSERT_EQ(dst.exit_code, 0) << dst.err;
  json times = dst.Json()["next"];
  ASSERT_EQ(times.size(), 3u);
  EXPECT_EQ(times[0]["local"], "2030-03-29 02:30:00 CET");
  EXPECT_EQ(times[2]["local"], "2030-03-31 03:00:00 CEST");
  EXPECT_FALSE(times[0].contains("warning"));
  EXPECT_EQ(redis_.Integer({"EXISTS", "baton:cron"}), 0);  // nothing stored

  // Past the zone data (2037) the local time may be wrong: said, not hidden.
  CliResult late = Run({"cron", "next", "--schedule", "0 12 1 7 *", "--tz", "Europe/Berlin",
                        "--from", "2037-01-01", "-n", "2"});
  ASSERT_EQ(late.exit_code, 0) << late.err;
  std::vector<std::string> lines = Lines(late.out);
  ASSERT_EQ(lines.size(), 2u) << late.out;
  EXPECT_EQ(lines[0].find("warning"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("warning: past the time zone data"), std::string::npos) << lines[1];

  // A stored job that is disabled says so above its times.
  ASSERT_EQ(Run({"cron", "add", "paused", "--schedule", "@daily", "--ns", kNs, "--type", "r",
                 "--disabled"})
                .exit_code,
            0);
  CliResult paused = Run({"cron", "next", "paused", "-n", "1"});
  ASSERT_EQ(paused.exit_code, 0) << paused.err;
  EXPECT_EQ(paused.out.rfind("(disabled: these times will not fire until 'baton cron enable "
                             "paused')\n",
                             0),
            0u)
      << paused.out;
  EXPECT_EQ(Run({"cron", "next", "paused", "--json"}).Json()["enabled"], false);

  CliResult neither = Run({"cron", "next"});
  EXPECT_EQ(neither.exit_code, 1);
  EXPECT_NE(neither.err.find("name: required"), std::string::npos) << neither.err;
  EXPECT_EQ(Run({"cron", "next", "paused", "--schedule", "@daily"}).exit_code, 1);
  CliResult bad = Run({"cron", "next", "--schedule", "61 * * * *"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("schedule: minute"), std::string::npos) << bad.err;
}

TEST_F(CliTest, BadOptionValuesFailLikeEveryOtherBadValue) {
  struct Case {
    std::vector<std::string> args;
    std::string command;
    std::string option;
  };
  const std::vector<Case> cases = {
      {{"enqueue", "--ns", kNs, "--type", "t", "--delay", "-5"}, "enqueue", "--delay"},
      {{"enqueue", "--ns", kNs, "--type", "t", "--max-retry", "1000000000"},
       "enqueue",
       "--max-retry"},
      {{"enqueue", "--ns", kNs, "--type", "t", "--max-retry", "-1"}, "enqueue", "--max-retry"},
      {{"enqueue", "--ns", kNs, "--type", "t", "--timeout", "0"}, "enqueue", "--timeout"},
      {{"enqueue", "--ns", kNs, "--type", "t", "--delay", "soon"}, "enqueue", "--delay"},
      {{"cron", "next", "job", "-n", "1001"}, "cron next", "-n"},
      {{"work", "--ns", kNs, "--type", "t", "--exec", "true", "--lease-ms", "5"},
       "work",
       "--lease-ms"},
      {{"work", "--ns", kNs, "--type", "t", "--exec", "true", "--retry-base-ms", "0"},
       "work",
       "--retry-base-ms"},
      {{"work", "--ns", kNs, "--type", "t", "--exec", "true", "--concurrency", "0"},
       "work",
       "--concurrency"},
  };
  for (const Case& c : cases) {
    CliResult text = Run(c.args);
    EXPECT_EQ(text.exit_code, 1) << text.err;
    EXPECT_EQ(text.err.rfind("baton " + c.command + ": invalid_argument: " + c.option + ": ", 0),
              0u)
        << text.err;
    std::vector<std::string> with_json = c.args;
    with_json.push_back("--json");
    CliResult js = Run(with_json);
    EXPECT_EQ(js.exit_code, 1) << js.err;
    json doc = js.Json();
    EXPECT_EQ(doc["error"]["code"], "invalid_argument") << js.out;
    EXPECT_EQ(doc["error"]["exit_code"], 1) << js.out;
    EXPECT_EQ(doc["error"]["message"].get<std::string>().rfind(c.option + ": ", 0), 0u) << js.out;
  }
  // Genuine command-line mistakes stay exit 2, and say so in --json too.
  CliResult usage = Run({"enqueue", "--type", "t", "--json"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_EQ(usage.Json()["error"]["code"], "usage");
  CliResult unknown = Run({"enqueue", "--ns", kNs, "--type", "t", "--bogus", "1", "--json"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_EQ(unknown.Json()["error"]["code"], "usage");
  EXPECT_EQ(unknown.err.rfind("baton enqueue: ", 0), 0u) << unknown.err;

  // The unique-key conflict names its code like every other error line.
  ASSERT_EQ(Run({"enqueue", "--ns", kNs, "--type", "u", "--unique-key", "k", "--unique-ttl", "60"})
                .exit_code,
            0);
  CliResult held =
      Run({"enqueue", "--ns", kNs, "--type", "u", "--unique-key", "k", "--unique-ttl", "60"});
  EXPECT_EQ(held.exit_code, 4);
  EXPECT_EQ(held.err.rfind("baton enqueue: conflict: unique key \"k\" is held by task ", 0), 0u)
      << held.err;
}

TEST_F(CliTest, AtInMillisecondsAndAnEmptyIdAreRefused) {
  CliResult ms = Run({"enqueue", "--ns", kNs, "--type", "t", "--at", "1722489600000"});
  EXPECT_EQ(ms.exit_code, 1) << ms.err;
  EXPECT_NE(ms.err.find("invalid_argument: --at: must be Unix seconds"), std::string::npos)
      << ms.err;
  EXPECT_NE(ms.err.find("milliseconds?"), std::string::npos) << ms.err;
  CliResult far = Run({"enqueue", "--ns", kNs, "--type", "t", "--at", "99999999999999999"});
  EXPECT_EQ(far.exit_code, 1) << far.err;
  CliResult good = Run({"enqueue", "--json", "--ns", kNs, "--type", "t", "--at", "4000000000"});
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ(good.Json()["due_ms"], 4000000000000LL);

  CliResult empty = Run({"enqueue", "--ns", kNs, "--type", "t", "--id", ""});
  EXPECT_EQ(empty.exit_code, 1) << empty.err;
  EXPECT_NE(empty.err.find("invalid_argument: --id: "), std::string::npos) << empty.err;
  EXPECT_EQ(redis_.Command({"HLEN", internal::Keys(kNs).Tasks()})->integer, 1);
}

}  // namespace
}  // namespace baton::testing
