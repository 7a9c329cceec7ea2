// The public cron API (include/baton/cron.h) against a real redis-server: CronClient's round trips
// through baton:cron, its refusals (nothing written), the change announcements batond listens to,
// unreadable stored definitions, and NextFireTimes across Berlin's 2030 DST changes.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "baton/cron.h"
#include "broker/redis_connection.h"
#include "broker/subscription.h"
#include "cron/cron_store.h"
#include "harness/redis_server.h"

namespace baton {
namespace {

using namespace std::chrono;
using json = nlohmann::json;
using testing::RedisServer;

// Every field away from its default.
CronJobSpec FullSpec(const std::string& name = "daily-invoices") {
  CronJobSpec job;
  job.name = name;
  job.schedule = "0 9 * * MON-FRI";
  job.timezone = "Europe/Berlin";
  job.ns = "billing";
  job.task_type = "invoice.send";
  job.payload = {{"batch", 7}, {"dry_run", false}};
  job.max_retry = 5;
  job.enabled = false;
  job.missed = MissedTicks::kRunOnce;
  job.execution_timeout = 300;
  return job;
}

CronJobSpec MinimalSpec(const std::string& name) {
  CronJobSpec job;
  job.name = name;
  job.schedule = "@hourly";
  job.ns = "ops";
  job.task_type = "ping";
  return job;
}

// A subscriber to baton:cron:changed (broker's Subscription); Next() waits up to 5 s.
class ChangeSubscriber {
 public:
  explicit ChangeSubscriber(int port) {
    auto endpoint = internal::RedisEndpoint::Parse("redis://127.0.0.1:" + std::to_string(port));
    EXPECT_TRUE(endpoint.ok());
    auto sub = internal::Subscription::Open(*endpoint, {"baton:cron:changed"});
    EXPECT_TRUE(sub.ok()) << sub.status().ToString();
    if (sub.ok()) sub_ = std::move(*sub);
  }

  // The job name of the next message; "" on timeout.
  std::string Next() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (sub_ && buffered_.empty() && std::chrono::steady_clock::now() < deadline) {
      auto messages = sub_->Wait(std::chrono::milliseconds(100));
      if (!messages.ok()) return "";
      for (auto& m : *messages) buffered_.push_back(std::move(m.payload));
    }
    if (buffered_.empty()) return "";
    std::string name = buffered_.front();
    buffered_.erase(buffered_.begin());
    return name;
  }

 private:
  std::unique_ptr<internal::Subscription> sub_;
  std::vector<std::string> buffered_;
};

class CronClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CronClientOptions options;
    options.redis.url = redis_.url();
    auto client = CronClient::Connect(options);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(*client);
  }

  json Stored(const std::string& name) {
    return json::parse(redis_.String({"HGET", "baton:cron", name}));
  }

  RedisServer redis_;
  std::unique_ptr<CronClient> client_;
};

TEST_F(CronClientTest, PutGetListRemoveRoundTrip) {
  const CronJobSpec full = FullSpec();
  ASSERT_TRUE(client_->Put(full).ok());
  ASSERT_TRUE(client_->Put(MinimalSpec("alpha")).ok());

  // The stored document is the one of docs/cron.md, which batond reads.
  EXPECT_EQ(Stored("daily-invoices"), json::parse(R"({
    "schedule": "0 9 * * MON-FRI", "timezone": "Europe/Berlin", "namespace": "billing",
    "task_type": "invoice.send", "payload": {"batch": 7, "dry_run": false}, "max_retry": 5,
    "enabled": false, "missed": "run_once", "execution_timeout": 300})"));

  auto got = client_->Get("daily-invoices");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, full);
  auto minimal = client_->Get("alpha");
  ASSERT_TRUE(minimal.ok() && minimal->has_value());
  EXPECT_EQ(**minimal, MinimalSpec("alpha"));  // defaults: UTC, {}, 3 retries, enabled, skip
  auto missing = client_->Get("nope");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());

  // Put replaces.
  CronJobSpec changed = full;
  changed.schedule = "*/15 * * * *";
  changed.execution_timeout.reset();
  ASSERT_TRUE(client_->Put(changed).ok());
  EXPECT_EQ(**client_->Get("daily-invoices"), changed);
  EXPECT_FALSE(Stored("daily-invoices").contains("execution_timeout"));

  auto list = client_->List();
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->jobs.size(), 2u);
  EXPECT_EQ(list->jobs[0].name, "alpha");  // sorted by name
  EXPECT_EQ(list->jobs[1], changed);
  EXPECT_TRUE(list->unreadable.empty());

  EXPECT_TRUE(client_->Remove("daily-invoices").ok());
  EXPECT_FALSE(client_->Get("daily-invoices")->has_value());
  const Status again = client_->Remove("daily-invoices");
  EXPECT_EQ(again.code(), StatusCode::kNotFound);
  EXPECT_EQ(again.message(), "cron remove: no cron job named daily-invoices");
  EXPECT_EQ(client_->List()->jobs.size(), 1u);
}

TEST_F(CronClientTest, AddOnlyCreates) {
  ASSERT_TRUE(client_->Add(MinimalSpec("once")).ok());
  CronJobSpec other = MinimalSpec("once");
  other.task_type = "other";
  const Status second = client_->Add(other);
  EXPECT_EQ(second.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(second.message(), "cron add: cron job once already exists");
  EXPECT_EQ(Stored("once")["task_type"], "ping");  // untouched

  // An unreadable definition exists too.
  redis_.Command({"HSET", "baton:cron", "junk", "{"});
  EXPECT_EQ(client_->Add(MinimalSpec("junk")).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(redis_.String({"HGET", "baton:cron", "junk"}), "{");
}

TEST_F(CronClientTest, SetEnabledKeepsTheDefinition) {
  CronJobSpec job = FullSpec();
  job.enabled = true;
  ASSERT_TRUE(client_->Put(job).ok());

  ASSERT_TRUE(client_->SetEnabled("daily-invoices", false).ok());
  EXPECT_EQ(Stored("daily-invoices")["enabled"], false);
  job.enabled = false;
  EXPECT_EQ(**client_->Get("daily-invoices"), job);
  ASSERT_TRUE(client_->SetEnabled("daily-invoices", false).ok());  // already: nothing to do
  ASSERT_TRUE(client_->SetEnabled("daily-invoices", true).ok());
  EXPECT_EQ(Stored("daily-invoices")["enabled"], true);

  const Status missing = client_->SetEnabled("nope", true);
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), "cron set_enabled: no cron job named nope");

  redis_.Command({"HSET", "baton:cron", "junk", R"({"schedule":"61 * * * *"})"});
  const Status junk = client_->SetEnabled("junk", false);
  EXPECT_EQ(junk.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(junk.message().rfind("cron set_enabled: stored definition of junk is invalid: ", 0), 0u)
      << junk.message();
  EXPECT_EQ(redis_.String({"HGET", "baton:cron", "junk"}), R"({"schedule":"61 * * * *"})");
}

TEST_F(CronClientTest, InvalidJobsAreRefusedNamingTheFieldAndNothingIsWritten) {
  ChangeSubscriber changes(redis_.port());
  struct Case {
    std::string what;
    CronJobSpec job;
    std::string message;
  };
  std::vector<Case> cases;
  {
    CronJobSpec j = MinimalSpec("bad-schedule");
    j.schedule = "61 * * * *";
    cases.push_back({"schedule", j, "cron put: schedule: minute: 61 is out of range 0..59"});
  }
  {
    CronJobSpec j = MinimalSpec("bad-zone");
    j.timezone = "Mars/Base";
    cases.push_back({"timezone", j, "cron put: timezone: unknown IANA time zone \"Mars/Base\""});
  }
  {
    CronJobSpec j = MinimalSpec("bad name");
    cases.push_back({"name", j, "cron put: name: must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"});
  }
  {
    CronJobSpec j = MinimalSpec("bad-retry");
    j.max_retry = 99;
    cases.push_back({"max_retry", j, "cron put: max_retry: must be an integer 0..25 (got 99)"});
  }
  {
    CronJobSpec j = MinimalSpec("bad-payload");
    j.payload = json::array({1, 2});
    cases.push_back({"payload", j, "cron put: payload: must be a JSON object"});
  }
  {
    CronJobSpec j = MinimalSpec("bad-timeout");
    j.execution_timeout = 0;
    cases.push_back({"execution_timeout", j,
                     "cron put: execution_timeout: must be an integer 1..86400 (got 0)"});
  }
  for (const Case& c : cases) {
    const Status put = client_->Put(c.job);
    EXPECT_EQ(put.code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_EQ(put.message(), c.message) << c.what;
    const Status add = client_->Add(c.job);
    EXPECT_EQ(add.code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_EQ(add.message().rfind("cron add: " + c.what + ": ", 0), 0u) << add.message();
    // The same check without Redis.
    EXPECT_EQ(c.job.Validate().code(), StatusCode::kInvalidArgument) << c.what;
  }
  EXPECT_EQ(redis_.Integer({"EXISTS", "baton:cron"}), 0);
  // Nothing was announced either: the first message is the valid Put below.
  ASSERT_TRUE(client_->Put(MinimalSpec("good")).ok());
  EXPECT_EQ(changes.Next(), "good");
}

TEST_F(CronClientTest, EveryChangeIsAnnouncedToRunningSchedulers) {
  ChangeSubscriber changes(redis_.port());
  ASSERT_TRUE(client_->Put(MinimalSpec("nightly")).ok());
  EXPECT_EQ(changes.Next(), "nightly");
  ASSERT_TRUE(client_->SetEnabled("nightly", false).ok());
  EXPECT_EQ(changes.Next(), "nightly");
  ASSERT_TRUE(client_->Add(MinimalSpec("other")).ok());
  EXPECT_EQ(changes.Next(), "other");
  ASSERT_TRUE(client_->Remove("nightly").ok());
  EXPECT_EQ(changes.Next(), "nightly");
}

TEST_F(CronClientTest, UnreadableDefinitionsDoNotFailList) {
  ASSERT_TRUE(client_->Put(MinimalSpec("b-good")).ok());
  ASSERT_TRUE(client_->Put(MinimalSpec("d-good")).ok());
  redis_.Command({"HSET", "baton:cron", "a-garbage", "{not json"});
  redis_.Command({"HSET", "baton:cron", "c-typo",
                  R"({"schedule":"@daily","namespace":"a","task_type":"b","timezon":"UTC"})"});

  auto list = client_->List();
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->jobs.size(), 2u);
  EXPECT_EQ(list->jobs[0].name, "b-good");
  EXPECT_EQ(list->jobs[1].name, "d-good");
  ASSERT_EQ(list->unreadable.size(), 2u);
  EXPECT_EQ(list->unreadable[0].name, "a-garbage");
  EXPECT_EQ(list->unreadable[0].definition, "{not json");
  EXPECT_EQ(list->unreadable[0].error, "definition: must be valid JSON");
  EXPECT_EQ(list->unreadable[1].name, "c-typo");
  EXPECT_EQ(list->unreadable[1].error, "timezon: unknown field");

  const auto get = client_->Get("a-garbage");
  EXPECT_EQ(get.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(get.status().message(),
            "cron get: stored definition of a-garbage is invalid: definition: must be valid JSON");
  // It can be replaced or removed.
  ASSERT_TRUE(client_->Put(MinimalSpec("a-garbage")).ok());
  EXPECT_TRUE(client_->Get("a-garbage")->has_value());
  EXPECT_TRUE(client_->Remove("c-typo").ok());
  EXPECT_TRUE(client_->List()->unreadable.empty());
}

TEST_F(CronClientTest, ReplaceWritesOnlyOverTheExpectedDefinition) {
  // The compare-and-set under SetEnabled: a definition that changed since it was read is kept.
  auto endpoint = internal::RedisEndpoint::Parse(redis_.url());
  ASSERT_TRUE(endpoint.ok());
  auto conn = internal::RedisConnection::Open(*endpoint);
  ASSERT_TRUE(conn.ok());
  internal::CronStore store(**conn);
  ASSERT_TRUE(store.Put("job", "v1").ok());
  auto stale = store.Replace("job", "v0", "v2");
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(*stale);
  EXPECT_EQ(redis_.String({"HGET", "baton:cron", "job"}), "v1");
  auto gone = store.Replace("none", "v0", "v2");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(*gone);
  EXPECT_EQ(redis_.Integer({"HEXISTS", "baton:cron", "none"}), 0);
  auto fresh = store.Replace("job", "v1", "v2");
  ASSERT_TRUE(fresh.ok());
  EXPECT_TRUE(*fresh);
  EXPECT_EQ(redis_.String({"HGET", "baton:cron", "job"}), "v2");
  // The connection is usable afterwards (no WATCH left behind).
  ASSERT_TRUE(store.Put("job", "v3").ok());
  EXPECT_EQ(redis_.String({"HGET", "baton:cron", "job"}), "v3");
}

TEST_F(CronClientTest, ConnectFailuresAndALostServer) {
  CronClientOptions options;
  options.redis.url = "http://nowhere";
  const auto bad = CronClient::Connect(options);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().rfind("cron connect: redis_url: ", 0), 0u)
      << bad.status().message();
  options.redis.url = "redis://127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  options.redis.timeout = milliseconds(500);
  EXPECT_EQ(CronClient::Connect(options).status().code(), StatusCode::kUnavailable);

  redis_.Kill();
  EXPECT_EQ(client_->Get("any").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(client_->Put(MinimalSpec("any")).code(), StatusCode::kUnavailable);
}

// UTC instants as "YYYY-MM-DDTHH:MM:SSZ".
std::vector<std::string> Iso(const std::vector<sys_seconds>& times) {
  std::vector<std::string> out;
  for (sys_seconds t : times) {
    const sys_days day = floor<days>(t);
    const year_month_day ymd(day);
    const hh_mm_ss<seconds> hms(t - day);
    char text[64];
    std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02ld:%02ld:%02ldZ", int(ymd.year()),
                  unsigned(ymd.month()), unsigned(ymd.day()), long(hms.hours().count()),
                  long(hms.minutes().count()), long(hms.seconds().count()));
    out.emplace_back(text);
  }
  return out;
}

TEST(NextFireTimesTest, FollowsBerlinAcrossBothDstChanges) {
  // Berlin springs forward on 2030-03-31 (02:00 CET -> 03:00 CEST): the 02:30 run fires once, at
  // 03:00 CEST. It falls back on 2030-10-27 (03:00 CEST -> 02:00 CET): once, at the first 02:30.
  auto spring = NextFireTimes("30 2 * * *", "Europe/Berlin", sys_days{2030y / 3 / 29}, 3);
  ASSERT_TRUE(spring.ok()) << spring.status().ToString();
  EXPECT_EQ(Iso(*spring), (std::vector<std::string>{"2030-03-29T01:30:00Z", "2030-03-30T01:30:00Z",
                                                    "2030-03-31T01:00:00Z"}));
  auto autumn = NextFireTimes("30 2 * * *", "Europe/Berlin", sys_days{2030y / 10 / 26}, 3);
  ASSERT_TRUE(autumn.ok());
  EXPECT_EQ(Iso(*autumn), (std::vector<std::string>{"2030-10-26T00:30:00Z", "2030-10-27T00:30:00Z",
                                                    "2030-10-28T01:30:00Z"}));
  // A wildcard hour keeps real time through the repeated hour: 00:30Z (02:30 CEST) and 01:30Z
  // (02:30 CET) both fire.
  auto hourly = NextFireTimes("30 * * * *", "Europe/Berlin",
                              sys_days{2030y / 10 / 27} + hours(0) + minutes(29), 2);
  ASSERT_TRUE(hourly.ok());
  EXPECT_EQ(Iso(*hourly),
            (std::vector<std::string>{"2030-10-27T00:30:00Z", "2030-10-27T01:30:00Z"}));

  // Strictly after `after`: paging from the last time gives the next ones.
  auto page = NextFireTimes("30 2 * * *", "Europe/Berlin", spring->back(), 1);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(Iso(*page), (std::vector<std::string>{"2030-04-01T00:30:00Z"}));
}

TEST(NextFireTimesTest, UsesTheJobsScheduleAndZoneOnly) {
  CronJobSpec job;  // no name, namespace or type: a preview needs none
  job.schedule = "0 9 * * MON-FRI";
  job.timezone = "America/New_York";
  job.enabled = false;
  auto times = NextFireTimes(job, sys_days{2030y / 1 / 4}, 2);  // a Friday
  ASSERT_TRUE(times.ok()) << times.status().ToString();
  EXPECT_EQ(Iso(*times),
            (std::vector<std::string>{"2030-01-04T14:00:00Z", "2030-01-07T14:00:00Z"}));
  EXPECT_TRUE(NextFireTimes(job, sys_days{2030y / 1 / 4}, 0)->empty());
}

TEST(NextFireTimesTest, RefusesABadScheduleOrZone) {
  const auto schedule = NextFireTimes("61 * * * *", "UTC", sys_days{2030y / 1 / 1}, 1);
  EXPECT_EQ(schedule.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(schedule.status().message(), "schedule: minute: 61 is out of range 0..59");
  const auto zone = NextFireTimes("@daily", "Mars/Base", sys_days{2030y / 1 / 1}, 1);
  EXPECT_EQ(zone.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(zone.status().message(), "timezone: unknown IANA time zone \"Mars/Base\"");
}

}  // namespace
}  // namespace baton
