// baton-console end to end over HTTP: a real baton-console process, a real redis-server with the
// functions library, real C++ workers and an SQLite store. What a stranger's client would try:
// no session, a stolen cookie without the CSRF token, a foreign origin, a viewer's replay,
// read-only mode, garbage bodies, a bulk action on a stale preview, and the audit trail.
#include <baton/client.h>
#include <baton/inspector.h>
#include <baton/worker.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "console_browser.h"
#include "harness/process.h"
#include "harness/redis_server.h"
#include "sql_database.h"
#include "users.h"

namespace baton::console {
namespace {

using namespace std::chrono;
using baton::testing::Process;
using baton::testing::RedisServer;
using baton::testing::TempDir;
using nlohmann::json;

class ConsoleE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    redis_.LoadFunctions();
    store_ = "sqlite://" + dir_.path() + "/stats.db";
    web_ = dir_.path() + "/web";
    std::filesystem::create_directories(web_);
    std::ofstream(web_ + "/index.html") << "<!doctype html><title>baton</title>";
    users_ = UsersFile(dir_.path());
    ClientOptions options;
    options.redis.url = redis_.url();
    auto client = Client::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
  }

  // Starts a console; returns its port (0 when it did not start).
  int StartConsole(std::vector<std::string> extra = {}) {
    log_ = dir_.path() + "/console" + std::to_string(consoles_.size()) + ".log";
    std::vector<std::string> argv = {BATON_CONSOLE_PATH,
                                     "--redis",
                                     redis_.url(),
                                     "--store",
                                     store_,
                                     "--users",
                                     users_,
                                     "--web-dir",
                                     web_,
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--live-interval-ms",
                                     "200"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    consoles_.push_back(std::make_unique<Process>(argv, log_));
    const std::string marker = "listening on http://127.0.0.1:";
    for (int i = 0; i < 500 && consoles_.back()->Running(); ++i) {
      const std::string log = baton::testing::ReadFile(log_);
      if (auto at = log.find(marker); at != std::string::npos) {
        return std::atoi(log.c_str() + at + marker.size());
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    return 0;
  }

  // Makes `n` dead tasks of shop/mail (their worker fails them with markup in the error) and
  // returns their ids.
  std::vector<std::string> MakeDead(int n, const std::string& type = "mail") {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      TaskRequest r;
      r.ns = "shop";
      r.task_type = type;
      r.payload = {{"n", i}, {"html", "<script>alert(1)</script>"}};
      r.options.max_retry = 0;
      auto queued = client_->Enqueue(r);
      EXPECT_TRUE(queued.ok()) << queued.status().ToString();
      ids.push_back(queued->task_id);
    }
    WorkerOptions options;
    options.redis.url = redis_.url();
    options.block = milliseconds(100);
    Worker worker(options);
    EXPECT_TRUE(
        worker.Register("shop", type, [](TaskContext&) { return Status::Internal("<b>boom</b>"); })
            .ok());
    EXPECT_TRUE(worker.Start().ok());
    EXPECT_TRUE(WaitUntil([&] {
      return redis_.Integer({"ZCARD", "baton:v2:{shop}:dead:" + type}) >= n;
    })) << "the tasks did not die";
    worker.Stop();
    return ids;
  }

  std::string TaskState(const std::string& id) {
    InspectorOptions options;
    options.redis.url = redis_.url();
    auto inspector = Inspector::Connect(options);
    if (!inspector.ok()) return "";
    auto info = (*inspector)->GetTask("shop", id);
    return info.ok() ? std::string(TaskStateName(info->state)) : "";
  }

  TempDir dir_;
  RedisServer redis_;
  std::string store_, web_, users_, log_;
  std::unique_ptr<Client> client_;
  std::vector<std::unique_ptr<Process>> consoles_;
};

TEST_F(ConsoleE2eTest, LoginSetsAnHttpOnlyStrictCookieAndAWrongPasswordIsRefused) {
  const int port = StartConsole();
  ASSERT_GT(port, 0) << baton::testing::ReadFile(log_);
  Browser b(port);
  auto wrong = b.Login("admin", "nope");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(Body(wrong)["error"], "wrong user name or password");
  EXPECT_FALSE(wrong->has_header("Set-Cookie"));
  auto unknown = b.Login("mallory", "admin-pw");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 401);

  auto ok = b.Login("admin", "admin-pw");
  ASSERT_TRUE(ok);
  ASSERT_EQ(ok->status, 200) << ok->body;
  const std::string cookie = ok->get_header_value("Set-Cookie");
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos) << cookie;
  EXPECT_NE(cookie.find("SameSite=Strict"), std::string::npos) << cookie;
  json session = Body(ok);
  EXPECT_EQ(session["role"], "admin");
  EXPECT_EQ(session["can_bulk"], true);
  auto again = b.Get("/api/session");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(Body(again)["user"], "admin");

  ASSERT_EQ(b.Post("/api/logout", json::object())->status, 200);
  EXPECT_EQ(b.Get("/api/session")->status, 401);  // the old cookie is dead
}

TEST_F(ConsoleE2eTest, FiveWrongPasswordsLockTheUserName) {
  const int port = StartConsole();
  ASSERT_GT(port, 0);
  Browser b(port);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(b.Login("operator", "guess")->status, 401);
  auto locked = b.Login("operator", "operator-pw");  // even the right password now
  ASSERT_TRUE(locked);
  EXPECT_EQ(locked->status, 429);
  EXPECT_TRUE(locked->has_header("Retry-After"));
  EXPECT_EQ(b.Login("viewer", "viewer-pw")->status, 200);  // other names are not locked
}

TEST_F(ConsoleE2eTest, EveryAnswerCarriesTheSecurityHeaders) {
  const int port = StartConsole();
  ASSERT_GT(port, 0);
  Browser b(port);
  for (const std::string path : {"/", "/index.html", "/api/session", "/api/nothing-here"}) {
    auto res = b.Get(path);
    ASSERT_TRUE(res) << path;
    const std::string csp = res->get_header_value("Content-Security-Policy");
    EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << path << ": " << csp;
    EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << path;
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << path;
    EXPECT_EQ(res->get_header_value("X-Frame-Options"), "DENY") << path;
    EXPECT_EQ(res->get_header_value("X-Content-Type-Options"), "nosniff") << path;
  }
  EXPECT_EQ(b.Get("/")->status, 200);
  EXPECT_EQ(b.Get("/api/session")->status, 401);
  auto missing = b.Get("/api/nothing-here");
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(Body(missing).contains("error"));
}

TEST_F(ConsoleE2eTest, EveryApiNeedsASessionAndEveryActionTheCsrfTokenAndOurOrigin) {
  const std::vector<std::string> ids = MakeDead(1);
  const int port = StartConsole();
  ASSERT_GT(port, 0);
  Browser anonymous(port);
  for (const std::string& path : std::vector<std::string>{
           "/api/overview", "/api/dead", "/api/live/snapshot", "/api/tasks/shop/" + ids[0],
           "/api/tasks/shop/" + ids[0] + "/payload", "/api/cron", "/api/audit", "/api/workers"}) {
    EXPECT_EQ(anonymous.Get(path)->status, 401) << path;
  }
  EXPECT_EQ(anonymous.Post("/api/dead/replay", {{"ns", "shop"}, {"id", ids[0]}})->status, 401);

  Browser admin(port);
  ASSERT_EQ(admin.Login("admin", "admin-pw")->status, 200);
  auto no_token = admin.Post("/api/dead/replay", {{"ns", "shop"}, {"id", ids[0]}}, false);
  EXPECT_EQ(no_token->status, 403);
  EXPECT_NE(Body(no_token)["error"].get<std::string>().find("X-CSRF-Token"), std::string::npos);
  auto foreign = admin.Post("/api/dead/replay", {{"ns", "shop"}, {"id", ids[0]}}, true,
                            {{"Origin", "http://evil.example"}});
  EXPECT_EQ(foreign->status, 403);
  auto login_foreign = admin.http().Post("/api/login", {{"Origin", "http://evil.example"}},
                                         json{{"user", "admin"}, {"password", "admin-pw"}}.dump(),
                                         "application/json");
  EXPECT_EQ(login_foreign->status, 403);
  auto login_form = admin.http().Post("/api/login", "user=admin&password=admin-pw",
                                      "application/x-www-form-urlencoded");
  EXPECT_EQ(login_form->status, 400);
  EXPECT_EQ(TaskState(ids[0]), "dead");  // nothing went through
}

TEST_F(ConsoleE2eTest, AViewerReadsButCannotActAndAnOperatorReplaysWhatAWorkerThenRuns) {
  const std::vector<std::string> ids = MakeDead(2);
  const int port = StartConsole();
  ASSERT_GT(port, 0);
  Browser viewer(port);
  ASSERT_EQ(viewer.Login("viewer", "viewer-pw")->status, 200);
  auto task = viewer.Get("/api/tasks/shop/" + ids[0]);
  ASSERT_EQ(task->status, 200) << task->body;
  json t = Body(task);
  EXPECT_EQ(t["live"]["state"], "dead");
  ASSERT_FALSE(t["live"]["errors"].empty());
  EXPECT_EQ(t["live"]["errors"][0]["error"], "internal: <b>boom</b>");  // as text, unchanged
  auto payload = viewer.Get("/api/tasks/shop/" + ids[0] + "/payload");
  ASSERT_EQ(payload->status, 200);
  EXPECT_EQ(json::parse(payload->body)["html"], "<script>alert(1)</script>");
  EXPECT_NE(payload->get_header_value("Content-Disposition").find("attachment"), std::string::npos);
  EXPECT_EQ(viewer.Post("/api/dead/replay", {{"ns", "shop"}, {"id", ids[0]}})->status, 403);
  EXPECT_EQ(viewer.Post("/api/dead/delete", {{"ns", "shop"}, {"id", ids[0]}})->status, 403);
  EXPECT_EQ(viewer.Get("/api/audit")->status, 403);
  EXPECT_EQ(TaskState(ids[0]), "dead");

  Browser op(port);
  ASSERT_EQ(op.Login("operator", "operator-pw")->status, 200);
  auto edited =
      op.Post("/api/dead/replay", {{"ns", "shop"}, {"id", ids[0]}, {"payload", {{"fixed", true}}}});
  ASSERT_EQ(edited->status, 200) << edited->body;
  EXPECT_TRUE(Body(edited).contains("stream_id"));
  EXPECT_EQ(op.Post("/api/dead/delete", {{"ns", "shop"}, {"id", ids[1]}})->status, 200);
  EXPECT_EQ(TaskState(ids[1]), "deleted");
  // Replaying it again: it is no longer dead.
  auto twice = op.Post("/api/dead/replay", {{"ns", "shop"}, {"id", ids[0]}});
  EXPECT_EQ(twice->status, 409) << twice->body;
  EXPECT_EQ(
      op.Post("/api/dead/bulk", {{"action", "replay"}, {"ns", "shop"}, {"expect", 1}})->status,
      403);  // bulk is for admins

  // A worker now runs the replayed task with the edited payload.
  WorkerOptions options;
  options.redis.url = redis_.url();
  options.block = milliseconds(100);
  Worker worker(options);
  std::atomic<bool> saw_fixed{false};
  ASSERT_TRUE(worker
                  .Register("shop", "mail",
                            [&](TaskContext& task) {
                              if (json::parse(task.task().payload_json).value("fixed", false))
                                saw_fixed = true;
                              return Status::Ok();
                            })
                  .ok());
  ASSERT_TRUE(worker.Start().ok());
  EXPECT_TRUE(WaitUntil([&] { return TaskState(ids[0]) == "done"; }));
  worker.Stop();
  EXPECT_TRUE(saw_fixed.load());

  Browser admin(port);
  ASSERT_EQ(admin.Login("admin", "admin-pw")->status, 200);
  json audit = Body(admin.Get("/api/audit"));
  bool replay_seen = false, delete_seen = false, refused_seen = false;
  for (const auto& e : audit["entries"]) {
    if (e["action"] == "edit_replay" && e["user"] == "operator" && e["outcome"] == "ok" &&
        e["task_ids"] == json::array({ids[0]})) {
      replay_seen = true;
    }
    if (e["action"] == "delete" && e["target"] == ids[1]) delete_seen = true;
    if (e["action"] == "replay" && e["outcome"] != "ok") refused_seen = true;
  }
  EXPECT_TRUE(replay_seen) << audit.dump(2);
  EXPECT_TRUE(delete_seen);
  EXPECT_TRUE(refused_seen);  // the failed second replay is on record too
}

TEST_F(ConsoleE2eTest, BulkActionsNeedTheCountThePreviewShowed) {
  MakeDead(3, "mail");
  MakeDead(2, "sms");
  const int port = StartConsole();
  ASSERT_GT(port, 0);
  Browser admin(port);
  ASSERT_EQ(admin.Login("admin", "admin-pw")->status, 200);
  json preview = Body(admin.Post("/api/dead/preview", {{"ns", "shop"}, {"type", "mail"}}));
  EXPECT_EQ(preview["matched"], 3) << preview.dump();
  EXPECT_EQ(preview["sample"].size(), 3u);
  auto stale = admin.Post("/api/dead/bulk",
                          {{"action", "delete"}, {"ns", "shop"}, {"type", "mail"}, {"expect", 2}});
  EXPECT_EQ(stale->status, 409);
  EXPECT_EQ(Body(stale)["matched"], 3);
  EXPECT_EQ(redis_.Integer({"ZCARD", "baton:v2:{shop}:dead:mail"}), 3);
  auto done = admin.Post("/api/dead/bulk",
                         {{"action", "delete"}, {"ns", "shop"}, {"type", "mail"}, {"expect", 3}});
  ASSERT_EQ(done->status, 200) << done->body;
  EXPECT_EQ(Body(done)["succeeded"], 3);
  EXPECT_EQ(redis_.Integer({"ZCARD", "baton:v2:{shop}:dead:mail"}), 0);
  EXPECT_EQ(redis_.Integer({"ZCARD", "baton:v2:{shop}:dead:sms"}), 2);  // other type untouched
  json audit = Body(admin.Get("/api/audit?limit=5"));
  ASSERT_FALSE(audit["entries"].empty());
  EXPECT_EQ(audit["entries"][0]["action"], "bulk_delete");
  EXPECT_EQ(audit["entries"][0]["task_ids"].size(), 3u);
}

TEST_F(ConsoleE2eTest, ReadOnlyModeRefusesEveryActionWhateverTheRole) {
  const std::vector<std::string> ids = MakeDead(1);
  const int port = StartConsole({"--read-only"});
  ASSERT_GT(port, 0);
  Browser admin(port);
  auto login = admin.Login("admin", "admin-pw");
  ASSERT_EQ(login->status, 200);
  EXPECT_EQ(Body(login)["read_only"], true);
  EXPECT_EQ(Body(login)["can_act"], false);
  auto replay = admin.Post("/api/dead/replay", {{"ns", "shop"}, {"id", ids[0]}});
  EXPECT_EQ(replay->status, 403);
  EXPECT_NE(Body(replay)["error"].get<std::string>().find("read-only"), std::string::npos);
  EXPECT_EQ(
      admin.Post("/api/dead/bulk", {{"action", "replay"}, {"ns", "shop"}, {"expect", 1}})->status,
      403);
  EXPECT_EQ(admin.Post("/api/cron/enable", {{"name", "x"}, {"enabled", false}})->status, 403);
  EXPECT_EQ(TaskState(ids[0]), "dead");
  EXPECT_EQ(admin.Get("/api/tasks/shop/" + ids[0])->status, 200);  // reading still works
}

TEST_F(ConsoleE2eTest, GarbageGetsAClearErrorNamingTheField) {
  const int port = StartConsole();
  ASSERT_GT(port, 0);
  Browser op(port);
  ASSERT_EQ(op.Login("operator", "operator-pw")->status, 200);
  struct Case {
    std::string path;
    json body;
    int status;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"/api/dead/replay", json::object(), 400, "ns: is required"},
      {"/api/dead/replay", {{"ns", "shop"}}, 400, "id: is required"},
      {"/api/dead/replay", {{"ns", 5}, {"id", "x"}}, 400, "ns: is required"},
      {"/api/dead/replay", {{"ns", "shop"}, {"id", "x"}, {"payload", {1, 2}}}, 400, "payload"},
      {"/api/dead/replay", {{"ns", "bad ns!"}, {"id", "x"}}, 400, "namespace"},
      {"/api/dead/replay", {{"ns", "shop"}, {"id", "no-such-task"}}, 404, ""},
      {"/api/dead/delete", json::array({1}), 400, "body: must be a JSON object"},
      {"/api/dead/preview", {{"ns", "shop"}, {"since_ms", "yesterday"}}, 400, "since_ms"},
      {"/api/cron/enable", {{"name", "nightly"}, {"enabled", "yes"}}, 400, "enabled"},
      {"/api/cron/enable", {{"name", "nightly"}, {"enabled", true}}, 404, ""},
  };
  for (const auto& c : cases) {
    auto res = op.Post(c.path, c.body);
    ASSERT_TRUE(res) << c.path;
    EXPECT_EQ(res->status, c.status) << c.path << " " << c.body.dump() << " -> " << res->body;
    json body = Body(res);
    ASSERT_TRUE(body.contains("error")) << res->body;
    EXPECT_NE(body["error"].get<std::string>().find(c.error), std::string::npos)
        << c.path << " " << c.body.dump() << " -> " << res->body;
  }
  for (const std::string path :
       {"/api/dead?limit=0", "/api/dead?from_ms=abc", "/api/series?ns=shop",
        "/api/workers?window_ms=-1", "/api/doctor?ns=shop"}) {
    auto res = op.Get(path);
    EXPECT_EQ(res->status, 400) << path << " -> " << res->body;
  }
  // A body that is not JSON at all, and one far too large.
  auto not_json =
      op.http().Post("/api/dead/replay", {{"Cookie", op.cookie()}}, "{{{", "application/json");
  EXPECT_EQ(not_json->status, 403);  // the CSRF check comes first
  auto huge = op.Post("/api/dead/replay",
                      {{"ns", "shop"}, {"id", "x"}, {"payload", std::string(3 << 20, 'a')}});
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->status, 413);
  // The console is still up.
  EXPECT_EQ(op.Get("/api/session")->status, 200);
}

TEST_F(ConsoleE2eTest, TheLiveStreamPushesSnapshotsWithTheQueues) {
  MakeDead(1);
  const int port = StartConsole();
  ASSERT_GT(port, 0);
  Browser viewer(port);
  ASSERT_EQ(viewer.Login("viewer", "viewer-pw")->status, 200);
  std::string received;
  int snapshots = 0;
  httplib::Client sse("127.0.0.1", port);
  sse.set_read_timeout(10);
  auto res =
      sse.Get("/api/live", {{"Cookie", viewer.cookie()}}, [&](const char* data, std::size_t size) {
        received.append(data, size);
        std::size_t at = 0;
        snapshots = 0;
        while ((at = received.find("event: snapshot\n", at)) != std::string::npos) {
          ++snapshots;
          ++at;
        }
        return snapshots < 2;  // two pushes, then hang up
      });
  EXPECT_GE(snapshots, 2) << received.substr(0, 500);
  const auto data_at = received.find("data: ");
  ASSERT_NE(data_at, std::string::npos);
  json snap = json::parse(received.substr(data_at + 6, received.find('\n', data_at) - data_at - 6),
                          nullptr, false);
  ASSERT_TRUE(snap.is_object()) << received.substr(0, 500);
  ASSERT_EQ(snap["namespaces"].size(), 1u) << snap.dump();
  EXPECT_EQ(snap["namespaces"][0]["ns"], "shop");
  EXPECT_EQ(snap["namespaces"][0]["queues"][0]["dead"], 1);
  // A second subscriber does not need the first one's connection; the console still answers.
  EXPECT_EQ(viewer.Get("/api/live/snapshot")->status, 200);
}

TEST_F(ConsoleE2eTest, APayloadNestedTooDeepToPrintIsShownAsTextAndCannotBeSent) {
  // 250,000 levels fit in 512 KiB: printing them as JSON would overflow the server's stack.
  const std::string deep = "{\"a\":" + std::string(250000, '[') + std::string(250000, ']') + "}";
  TaskRequest r;
  r.ns = "shop";
  r.task_type = "deep";
  r.payload_json = deep;
  r.options.max_retry = 0;
  auto queued = client_->Enqueue(r);
  ASSERT_TRUE(queued.ok()) << queued.status().ToString();
  const std::vector<std::string> dead = MakeDead(1);
  const int port = StartConsole();
  ASSERT_GT(port, 0);
  Browser op(port);
  ASSERT_EQ(op.Login("operator", "operator-pw")->status, 200);
  auto task = op.Get("/api/tasks/shop/" + queued->task_id);
  ASSERT_TRUE(task) << "the console died";
  ASSERT_EQ(task->status, 200);
  EXPECT_EQ(Body(task)["live"]["body"]["payload"], deep);  // as text
  auto raw = op.Get("/api/tasks/shop/" + queued->task_id + "/payload");
  ASSERT_EQ(raw->status, 200);
  EXPECT_EQ(raw->body, deep);
  // An edited payload that deep is refused before anything reaches Redis.
  auto replay = op.http().Post(
      "/api/dead/replay",
      {{"Cookie", op.cookie()}, {"X-CSRF-Token", Body(op.Get("/api/session"))["csrf"]}},
      R"({"ns": "shop", "id": ")" + dead[0] + R"(", "payload": )" + deep + "}", "application/json");
  ASSERT_TRUE(replay) << "the console died";
  EXPECT_EQ(replay->status, 400);
  EXPECT_NE(Body(replay)["error"].get<std::string>().find("body: must not nest"),
            std::string::npos);
  EXPECT_EQ(TaskState(dead[0]), "dead");
  EXPECT_EQ(op.Get("/api/session")->status, 200);
}

TEST_F(ConsoleE2eTest, ParallelGuessesCannotPassTheLoginLimit) {
  const int port = StartConsole();
  ASSERT_GT(port, 0);
  std::mutex mu;
  std::map<std::string, int> outcomes;  // HTTP status, or the client's error
  std::vector<std::thread> threads;
  for (int i = 0; i < 24; ++i) {
    threads.emplace_back([&, i] {
      Browser b(port);
      // cpp-httplib's listen backlog is 5 (fixed in Debian's build): in a burst of 24 connects a
      // few can be dropped by the kernel. A client would try again; so does this one.
      auto res = b.Login("operator", "guess" + std::to_string(i));
      for (int retry = 0; !res && retry < 5; ++retry) {
        std::this_thread::sleep_for(milliseconds(200));
        res = b.Login("operator", "guess" + std::to_string(i));
      }
      std::lock_guard<std::mutex> lock(mu);
      ++outcomes[res ? std::to_string(res->status) : "error " + httplib::to_string(res.error())];
    });
  }
  for (auto& t : threads) t.join();
  std::string seen;
  for (const auto& [k, n] : outcomes) seen += k + " x" + std::to_string(n) + "; ";
  // Never more password checks than the limit; every other attempt refused, none lost.
  EXPECT_LE(outcomes["401"], 5) << seen;
  EXPECT_EQ(outcomes["401"] + outcomes["429"], 24) << seen;
  // The guesses locked the name: now even the right password is refused.
  Browser late(port);
  EXPECT_EQ(late.Login("operator", "operator-pw")->status, 429);
}

TEST_F(ConsoleE2eTest, AnActionIsNotRunWhenItsAuditRowCannotBeWritten) {
  const std::vector<std::string> ids = MakeDead(1);
  const int port = StartConsole();
  ASSERT_GT(port, 0);
  Browser op(port);
  ASSERT_EQ(op.Login("operator", "operator-pw")->status, 200);
  {
    auto db = collector::OpenSqlDatabase(store_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->ExecScript("DROP TABLE audit_log").ok());
  }
  auto replay = op.Post("/api/dead/replay", {{"ns", "shop"}, {"id", ids[0]}});
  EXPECT_EQ(replay->status, 503) << replay->body;
  EXPECT_NE(Body(replay)["error"].get<std::string>().find("audit log"), std::string::npos);
  EXPECT_EQ(TaskState(ids[0]), "dead");
}

TEST_F(ConsoleE2eTest, ALiveStreamEndsWithItsSessionAndAProxysOriginCanBeAllowed) {
  const int port = StartConsole({"--allowed-origin", "https://baton.example.com"});
  ASSERT_GT(port, 0);
  Browser viewer(port);
  auto login = viewer.http().Post("/api/login", {{"Origin", "https://baton.example.com"}},
                                  json{{"user", "viewer"}, {"password", "viewer-pw"}}.dump(),
                                  "application/json");
  ASSERT_EQ(login->status, 200) << login->body;
  const std::string cookie = login->get_header_value("Set-Cookie");
  const std::string session_cookie = cookie.substr(0, cookie.find(';'));
  const std::string csrf = json::parse(login->body)["csrf"];
  EXPECT_EQ(
      viewer.http()
          .Post("/api/login", {{"Origin", "https://evil.example.com"}},
                json{{"user", "viewer"}, {"password", "viewer-pw"}}.dump(), "application/json")
          ->status,
      403);
  int snapshots = 0;
  bool logged_out = false;
  const auto started = steady_clock::now();
  httplib::Client sse("127.0.0.1", port);
  sse.set_read_timeout(20);
  sse.Get("/api/live", {{"Cookie", session_cookie}}, [&](const char* data, std::size_t size) {
    if (std::string(data, size).find("event: snapshot") != std::string::npos) ++snapshots;
    if (snapshots >= 1 && !logged_out) {
      httplib::Client other("127.0.0.1", port);
      logged_out = other
                       .Post("/api/logout", {{"Cookie", session_cookie}, {"X-CSRF-Token", csrf}},
                             "{}", "application/json")
                       ->status == 200;
    }
    return steady_clock::now() - started < seconds(15);  // the server must end it first
  });
  EXPECT_TRUE(logged_out);
  EXPECT_LT(steady_clock::now() - started, seconds(5)) << "the stream outlived its session";
}

TEST_F(ConsoleE2eTest, ErrorsOfTheHttpLayerAreJsonToo) {
  const int port = StartConsole();
  ASSERT_GT(port, 0);
  Browser op(port);
  ASSERT_EQ(op.Login("operator", "operator-pw")->status, 200);
  auto long_uri = op.Get("/api/dead?text=" + std::string(20000, 'x'));
  ASSERT_TRUE(long_uri);
  EXPECT_EQ(long_uri->status, 414);
  EXPECT_TRUE(Body(long_uri).contains("error")) << long_uri->body;
  auto nul = op.Get("/index.html%00.js");
  EXPECT_EQ(nul->status, 400);
  EXPECT_EQ(op.Get("/api/doctor?ns=shop&id=x&type=y")->status, 400);
  EXPECT_EQ(
      op.Post("/api/dead/preview", {{"ns", "shop"}, {"since_ms", 2}, {"until_ms", 1}})->status,
      400);
  auto long_name =
      op.Post("/api/cron/enable", {{"name", std::string(1000, 'n')}, {"enabled", true}});
  EXPECT_EQ(long_name->status, 400);
}

TEST_F(ConsoleE2eTest, ABrokenUsersFileStopsTheConsoleWithTheFieldNamed) {
  std::ofstream(users_) << R"({"users": [{"name": "ada", "role": "root", "password_hash": "x"}]})";
  const int port = StartConsole();
  EXPECT_EQ(port, 0);
  auto code = consoles_.back()->Wait(seconds(10));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2);
  EXPECT_NE(baton::testing::ReadFile(log_).find("users[0] (ada): role: must be viewer, operator "
                                                "or admin"),
            std::string::npos)
      << baton::testing::ReadFile(log_);
}

}  // namespace
}  // namespace baton::console
