// The store's ingest on both engines (a real SQLite file and a real PostgreSQL server): a batch
// replayed after a crash changes nothing, run halves pair whichever comes first, the newest
// state wins, retention keeps what it must, and migrations are versioned.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "harness/postgres_server.h"
#include "harness/process.h"
#include "retention.h"
#include "store_queries.h"
#include "store_schema.h"
#include "store_writer.h"

namespace baton::collector {
namespace {

using baton::testing::PostgresServer;
using baton::testing::TempDir;

class StoreWriterTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { postgres_ = new PostgresServer(); }
  static void TearDownTestSuite() {
    delete postgres_;
    postgres_ = nullptr;
  }

  void SetUp() override {
    if (GetParam() == "sqlite") {
      url_ = "sqlite://" + dir_.path() + "/stats.db";
    } else {
      // A fresh database per test on the shared server.
      url_ = postgres_->NewDatabaseUrl();
    }
    auto db = OpenSqlDatabase(url_);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    db_ = std::move(db).value();
    ASSERT_TRUE(MigrateStore(*db_).ok());
  }

  std::int64_t Scalar(const std::string& sql, const std::vector<SqlValue>& params = {}) {
    auto rows = db_->Query(sql, params);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    if (!rows.ok() || rows->empty()) return -1;
    return AsInt((*rows)[0][0]);
  }

  static EventRow Row(std::int64_t ms, std::int64_t idx, std::string id, std::string from,
                      std::string to, std::int64_t attempt, std::string worker = "") {
    EventRow r;
    r.ns = "shop";
    r.type = "mail";
    r.entry_ms = ms;
    r.entry_seq = 0;
    r.idx = idx;
    r.task_id = std::move(id);
    r.from = std::move(from);
    r.to = std::move(to);
    r.attempt = attempt;
    r.worker = std::move(worker);
    return r;
  }

  static constexpr std::int64_t kT0 = 1700000000000;  // 2023-11-14T22:13:20Z
  static inline PostgresServer* postgres_ = nullptr;
  TempDir dir_;
  std::string url_;
  std::unique_ptr<SqlDatabase> db_;
};

TEST_P(StoreWriterTest, AReplayedBatchChangesNothing) {
  const std::string w = "svc:host:1:abcdef:go";
  std::vector<EventRow> batch = {Row(kT0, 0, "a", "new", "queued", 0),
                                 Row(kT0, 1, "b", "new", "queued", 0),
                                 Row(kT0 + 10, 0, "a", "queued", "active", 1, w),
                                 Row(kT0 + 10, 1, "b", "queued", "active", 1, w),
                                 Row(kT0 + 40, 0, "a", "active", "done", 1, w)};
  StoreWriter writer(*db_);
  auto first = writer.Ingest(batch);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->inserted, 5);
  // The collector died before XACK: the same entries come again, with new ones.
  batch.push_back(Row(kT0 + 70, 0, "b", "active", "done", 1, w));
  auto second = writer.Ingest(batch);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->inserted, 1);
  EXPECT_EQ(second->duplicates, 5);

  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM events"), 6);
  EXPECT_EQ(Scalar("SELECT enqueued FROM type_totals"), 2);
  EXPECT_EQ(Scalar("SELECT started FROM type_totals"), 2);
  EXPECT_EQ(Scalar("SELECT succeeded FROM type_totals"), 2);
  EXPECT_EQ(Scalar("SELECT run_count FROM type_totals"), 2);
  EXPECT_EQ(Scalar("SELECT run_sum_ms FROM type_totals"), 30 + 60);
  EXPECT_EQ(Scalar("SELECT SUM(succeeded) FROM minute_stats"), 2);
  EXPECT_EQ(Scalar("SELECT succeeded FROM daily_stats WHERE day = '2023-11-14'"), 2);
  EXPECT_EQ(Scalar("SELECT succeeded FROM workers WHERE name = $1", {w}), 2);
  EXPECT_EQ(Scalar("SELECT started FROM workers WHERE name = $1", {w}), 2);
}

TEST_P(StoreWriterTest, ARunsEndStoredBeforeItsStartStillCountsOnce) {
  StoreWriter writer(*db_);
  // Two collectors: the one with the ack committed first.
  ASSERT_TRUE(writer.Ingest({Row(kT0 + 250, 0, "a", "active", "retry", 1, "w")}).ok());
  EXPECT_EQ(Scalar("SELECT run_count FROM type_totals"), 0);
  ASSERT_TRUE(writer.Ingest({Row(kT0, 0, "a", "queued", "active", 1, "w")}).ok());
  EXPECT_EQ(Scalar("SELECT run_count FROM type_totals"), 1);
  EXPECT_EQ(Scalar("SELECT run_sum_ms FROM type_totals"), 250);
  EXPECT_EQ(Scalar("SELECT failed FROM type_totals"), 1);
  // The run time lands in the minute the attempt ended, and in no other.
  EXPECT_EQ(Scalar("SELECT run_count FROM minute_stats WHERE minute = $1", {(kT0 + 250) / 60000}),
            1);
  EXPECT_EQ(Scalar("SELECT SUM(run_count) FROM minute_stats"), 1);
  // Both halves again (a replay): still one run.
  ASSERT_TRUE(writer
                  .Ingest({Row(kT0, 0, "a", "queued", "active", 1, "w"),
                           Row(kT0 + 250, 0, "a", "active", "retry", 1, "w")})
                  .ok());
  EXPECT_EQ(Scalar("SELECT run_count FROM type_totals"), 1);
  // A lease taken back is an attempt that ended, but not a run time.
  ASSERT_TRUE(writer
                  .Ingest({Row(kT0 + 3000, 0, "a", "queued", "active", 2, "w"),
                           Row(kT0 + 90000, 0, "a", "active", "retry", 2, "reclaim")})
                  .ok());
  EXPECT_EQ(Scalar("SELECT run_count FROM type_totals"), 1);
  EXPECT_EQ(Scalar("SELECT reclaimed FROM type_totals"), 1);
  EXPECT_EQ(Scalar("SELECT failed FROM type_totals"), 2);
}

TEST_P(StoreWriterTest, TheNewestEventDecidesATasksStateWhateverOrderBatchesCome) {
  StoreWriter writer(*db_);
  EventRow dead = Row(kT0 + 500, 0, "a", "active", "dead", 1, "w");
  dead.error = "error: card declined <script>alert(1)</script>";
  dead.stack = "Traceback\n  at pay()";
  ASSERT_TRUE(writer.Ingest({dead}).ok());
  ASSERT_TRUE(writer
                  .Ingest({Row(kT0, 0, "a", "new", "queued", 0),
                           Row(kT0 + 10, 0, "a", "queued", "active", 1, "w")})
                  .ok());
  DeadSearch search;
  search.text = "CARD DECLINED";
  auto found = QueryDead(*db_, search);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ((*found)["tasks"].size(), 1u);
  EXPECT_EQ((*found)["tasks"][0]["error"], dead.error);
  EXPECT_EQ((*found)["tasks"][0]["stack"], dead.stack);
  // LIKE wildcards in the search are literal.
  search.text = "%";
  EXPECT_EQ((*QueryDead(*db_, search))["tasks"].size(), 0u);
  // Replayed, then done: no longer dead.
  ASSERT_TRUE(writer
                  .Ingest({Row(kT0 + 900, 0, "a", "dead", "queued", 0),
                           Row(kT0 + 950, 0, "a", "queued", "active", 1, "w"),
                           Row(kT0 + 990, 0, "a", "active", "done", 1, "w")})
                  .ok());
  EXPECT_EQ((*QueryDead(*db_, DeadSearch{}))["tasks"].size(), 0u);
  auto timeline = QueryTimeline(*db_, "a");
  ASSERT_TRUE(timeline.ok());
  EXPECT_EQ((*timeline)["events"].size(), 6u);
  EXPECT_EQ((*timeline)["state"], "done");
  EXPECT_EQ((*timeline)["events"][2]["stack"], dead.stack);
  EXPECT_EQ(Scalar("SELECT replayed FROM type_totals"), 1);
}

TEST_P(StoreWriterTest, RetentionDropsRawEventsAndOldMinutesButKeepsDailyTotalsAndDeadTasks) {
  StoreWriter writer(*db_);
  const std::int64_t day = 86400000;
  ASSERT_TRUE(writer
                  .Ingest({Row(kT0, 0, "old", "new", "queued", 0),
                           Row(kT0 + 1, 0, "gone", "queued", "dead", 0),
                           Row(kT0 + 20 * day, 0, "new", "new", "queued", 0)})
                  .ok());
  auto result = ApplyRetention(*db_, RetentionPolicy{7, 10}, kT0 + 21 * day);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->events_deleted, 2);
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM events"), 1);
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM minute_stats"), 1);
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM daily_stats"), 2);
  EXPECT_EQ(Scalar("SELECT enqueued FROM type_totals"), 2);
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM task_state WHERE state = 'dead'"), 1);
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM task_state"), 2);
}

TEST_P(StoreWriterTest, MigrationsAreVersionedAndANewerStoreIsRefused) {
  EXPECT_TRUE(MigrateStore(*db_).ok());  // again: nothing to do
  EXPECT_EQ(Scalar("SELECT MAX(version) FROM baton_schema"), CurrentSchemaVersion());
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM baton_schema"), CurrentSchemaVersion());
  ASSERT_TRUE(db_->Query("INSERT INTO baton_schema (version) VALUES ($1)",
                         {std::int64_t{CurrentSchemaVersion() + 1}})
                  .ok());
  Status refused = MigrateStore(*db_);
  EXPECT_EQ(refused.code(), StatusCode::kConflict);
  EXPECT_NE(refused.message().find("newer baton-collector"), std::string::npos);
}

TEST_P(StoreWriterTest, CollectorsStartingTogetherOnANewStoreBothMigrateIt) {
  for (int round = 0; round < 5; ++round) {
    const std::string url = GetParam() == "sqlite"
                                ? "sqlite://" + dir_.path() + "/new" + std::to_string(round) + ".db"
                                : postgres_->NewDatabaseUrl();
    std::vector<Status> results(4, Status::Ok());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < results.size(); ++i) {
      threads.emplace_back([&url, &results, i] {
        auto db = OpenSqlDatabase(url);
        results[i] = db.ok() ? MigrateStore(**db) : db.status();
      });
    }
    for (auto& t : threads) t.join();
    for (const Status& s : results) EXPECT_TRUE(s.ok()) << s.ToString();
    auto db = OpenSqlDatabase(url);
    ASSERT_TRUE(db.ok());
    auto versions = (*db)->Query("SELECT COUNT(*) FROM baton_schema");
    ASSERT_TRUE(versions.ok());
    EXPECT_EQ(AsInt((*versions)[0][0]), CurrentSchemaVersion());
  }
}

TEST_P(StoreWriterTest, GapsAreRecordedOncePerNewTotal) {
  StoreWriter writer(*db_);
  ASSERT_TRUE(writer.RecordGap("shop", kT0, 40, "1-0").ok());
  ASSERT_TRUE(writer.RecordGap("shop", kT0 + 1, 40, "1-0").ok());
  ASSERT_TRUE(writer.RecordGap("shop", kT0 + 2, 25, "1-0").ok());
  ASSERT_TRUE(writer.RecordGap("shop", kT0 + 3, 55, "9-0").ok());
  EXPECT_EQ(Scalar("SELECT COUNT(*) FROM event_gaps"), 2);
  EXPECT_EQ(*writer.LostTotal("shop"), 55);
  EXPECT_EQ(Scalar("SELECT SUM(lost) FROM event_gaps"), 55);
}

INSTANTIATE_TEST_SUITE_P(Engines, StoreWriterTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace baton::collector
