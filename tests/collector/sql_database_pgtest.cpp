// The SqlDatabase contract (collector/sql_database.h), the same cases on both engines: SQLite in a
// temporary file and PostgreSQL on a server of the suite's own (harness/postgres_server.h). The SQL
// is the portable subset the store writes: BIGINT, DOUBLE PRECISION, TEXT, `$N` placeholders with
// CAST where PostgreSQL cannot infer a parameter's type, ON CONFLICT, RETURNING.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "harness/postgres_server.h"
#include "harness/process.h"
#include "sql_database.h"

namespace baton::collector {
namespace {

using ::baton::testing::FreeLoopbackPort;
using ::baton::testing::PostgresServer;
using ::baton::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct SqliteEngine {
  static constexpr const char* kName = "Sqlite";
  static void Start() {}
  static void Stop() {}
  static std::string Url(const TempDir& dir) { return "sqlite://" + dir.path() + "/store.db"; }
  static void Reset(SqlDatabase&) {}  // a new file per test
};

struct PostgresEngine {
  static constexpr const char* kName = "Postgres";
  static inline std::unique_ptr<PostgresServer> server;
  static void Start() { server = std::make_unique<PostgresServer>(); }
  static void Stop() { server.reset(); }
  static std::string Url(const TempDir&) { return server->url(); }
  // One server for the suite: each test starts from an empty schema.
  static void Reset(SqlDatabase& db) {
    Status reset = db.ExecScript("DROP SCHEMA public CASCADE; CREATE SCHEMA public;");
    ASSERT_TRUE(reset.ok()) << reset.ToString();
  }
};

template <typename Engine>
class SqlDatabaseTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { Engine::Start(); }
  static void TearDownTestSuite() { Engine::Stop(); }

  void SetUp() override {
    db_ = Open();
    ASSERT_NE(db_, nullptr);
    Engine::Reset(*db_);
  }

  std::unique_ptr<SqlDatabase> Open() {
    auto db = OpenSqlDatabase(Engine::Url(dir_));
    EXPECT_TRUE(db.ok()) << db.status().ToString();
    return db.ok() ? std::move(*db) : nullptr;
  }

  // Runs a statement that must succeed; its rows.
  std::vector<SqlRow> Run(std::string_view sql, const std::vector<SqlValue>& params = {}) {
    auto rows = db_->Query(sql, params);
    EXPECT_TRUE(rows.ok()) << sql << ": " << rows.status().ToString();
    return rows.ok() ? std::move(*rows) : std::vector<SqlRow>{};
  }

  // The single value a statement returns.
  SqlValue One(std::string_view sql, const std::vector<SqlValue>& params = {}) {
    auto rows = Run(sql, params);
    EXPECT_EQ(rows.size(), 1u) << sql;
    if (rows.size() != 1 || rows[0].size() != 1) return std::monostate{};
    return rows[0][0];
  }

  std::int64_t Count(const std::string& table) {
    return AsInt(One("SELECT COUNT(*) FROM " + table));
  }

  TempDir dir_;
  std::unique_ptr<SqlDatabase> db_;
};

struct EngineNames {
  template <typename Engine>
  static std::string GetName(int) {
    return Engine::kName;
  }
};

using Engines = ::testing::Types<SqliteEngine, PostgresEngine>;
TYPED_TEST_SUITE(SqlDatabaseTest, Engines, EngineNames);

TYPED_TEST(SqlDatabaseTest, IntegersRoundTrip) {
  this->Run("CREATE TABLE t (k BIGINT PRIMARY KEY, n BIGINT)");
  const std::vector<std::int64_t> values = {0,
                                            1,
                                            -1,
                                            std::int64_t{1} << 62,
                                            -(std::int64_t{1} << 62),
                                            std::numeric_limits<std::int64_t>::max(),
                                            std::numeric_limits<std::int64_t>::min()};
  for (std::size_t i = 0; i < values.size(); ++i) {
    this->Run("INSERT INTO t (k, n) VALUES ($1, $2)", {static_cast<std::int64_t>(i), values[i]});
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(this->One("SELECT n FROM t WHERE k = $1", {static_cast<std::int64_t>(i)}),
              SqlValue(values[i]));
    EXPECT_EQ(this->One("SELECT CAST($1 AS BIGINT)", {values[i]}), SqlValue(values[i]));
  }
  EXPECT_EQ(this->One("SELECT COUNT(*) FROM t WHERE n > $1", {std::int64_t{1}}),
            SqlValue(std::int64_t{2}));
}

TYPED_TEST(SqlDatabaseTest, DoublesRoundTrip) {
  this->Run("CREATE TABLE t (k BIGINT PRIMARY KEY, x DOUBLE PRECISION)");
  const std::vector<double> values = {0.0, 0.1, -2.5, 1.0 / 3.0, 1e300, -1e-300, 123456789.125};
  for (std::size_t i = 0; i < values.size(); ++i) {
    this->Run("INSERT INTO t (k, x) VALUES ($1, $2)", {static_cast<std::int64_t>(i), values[i]});
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(this->One("SELECT x FROM t WHERE k = $1", {static_cast<std::int64_t>(i)}),
              SqlValue(values[i]));
    EXPECT_EQ(this->One("SELECT CAST($1 AS DOUBLE PRECISION)", {values[i]}), SqlValue(values[i]));
  }
  // An integer into a DOUBLE PRECISION column reads back as a double.
  this->Run("INSERT INTO t (k, x) VALUES ($1, $2)", {std::int64_t{100}, std::int64_t{7}});
  EXPECT_EQ(this->One("SELECT x FROM t WHERE k = 100"), SqlValue(7.0));
}

TYPED_TEST(SqlDatabaseTest, TextRoundTrip) {
  this->Run("CREATE TABLE t (k BIGINT PRIMARY KEY, s TEXT)");
  const std::vector<std::string> values = {"",
                                           "plain",
                                           "it's",
                                           "say \"hi\"",
                                           "back\\slash",
                                           "é中😀",
                                           "<script>alert('x')</script>",
                                           "$1 and $2",
                                           "x'); DROP TABLE t; --",
                                           "line\nbreak\ttab"};
  for (std::size_t i = 0; i < values.size(); ++i) {
    this->Run("INSERT INTO t (k, s) VALUES ($1, $2)", {static_cast<std::int64_t>(i), values[i]});
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(this->One("SELECT s FROM t WHERE k = $1", {static_cast<std::int64_t>(i)}),
              SqlValue(values[i]));
    EXPECT_EQ(this->One("SELECT k FROM t WHERE s = $1", {values[i]}),
              SqlValue(static_cast<std::int64_t>(i)));
    EXPECT_EQ(this->One("SELECT CAST($1 AS TEXT)", {values[i]}), SqlValue(values[i]));
  }
  EXPECT_EQ(this->Count("t"), static_cast<std::int64_t>(values.size()));
}

TYPED_TEST(SqlDatabaseTest, NullRoundTrip) {
  this->Run("CREATE TABLE t (k BIGINT PRIMARY KEY, n BIGINT, x DOUBLE PRECISION, s TEXT)");
  const SqlValue null;
  this->Run("INSERT INTO t (k, n, x, s) VALUES ($1, $2, $3, $4)",
            {std::int64_t{1}, null, null, null});
  auto rows = this->Run("SELECT n, x, s FROM t WHERE k = 1");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (SqlRow{null, null, null}));
  EXPECT_EQ(this->One("SELECT COUNT(*) FROM t WHERE n IS NULL AND x IS NULL AND s IS NULL"),
            SqlValue(std::int64_t{1}));
  EXPECT_EQ(this->One("SELECT CAST($1 AS BIGINT)", {null}), null);
  EXPECT_EQ(this->One("SELECT CAST($1 AS TEXT)", {null}), null);
  // Null is not the empty string.
  EXPECT_EQ(this->One("SELECT CAST($1 AS TEXT)", {std::string()}), SqlValue(std::string()));
}

TYPED_TEST(SqlDatabaseTest, PlaceholdersReusedAndOutOfOrder) {
  EXPECT_EQ(this->One("SELECT CAST($1 AS BIGINT) + CAST($1 AS BIGINT)", {std::int64_t{21}}),
            SqlValue(std::int64_t{42}));
  auto rows =
      this->Run("SELECT CAST($2 AS TEXT), CAST($1 AS TEXT)", {std::string("a"), std::string("b")});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (SqlRow{std::string("b"), std::string("a")}));

  this->Run("CREATE TABLE t (k BIGINT PRIMARY KEY, s TEXT, n BIGINT)");
  this->Run("INSERT INTO t (k, s, n) VALUES ($2, $1, $2)", {std::string("x"), std::int64_t{5}});
  rows = this->Run("SELECT k, s, n FROM t");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (SqlRow{std::int64_t{5}, std::string("x"), std::int64_t{5}}));
}

TYPED_TEST(SqlDatabaseTest, OnConflictDoNothingReturnsOnlyInsertedRows) {
  this->Run("CREATE TABLE t (k BIGINT PRIMARY KEY)");
  this->Run("INSERT INTO t (k) VALUES ($1), ($2)", {std::int64_t{1}, std::int64_t{2}});
  auto rows =
      this->Run("INSERT INTO t (k) VALUES ($1), ($2), ($3) ON CONFLICT (k) DO NOTHING RETURNING k",
                {std::int64_t{2}, std::int64_t{3}, std::int64_t{4}});
  std::vector<std::int64_t> inserted;
  for (const auto& row : rows) inserted.push_back(AsInt(row.at(0)));
  std::sort(inserted.begin(), inserted.end());  // RETURNING's order is not specified
  EXPECT_EQ(inserted, (std::vector<std::int64_t>{3, 4}));
  EXPECT_TRUE(this->Run("INSERT INTO t (k) VALUES ($1) ON CONFLICT (k) DO NOTHING RETURNING k",
                        {std::int64_t{1}})
                  .empty());
  EXPECT_EQ(this->Count("t"), 4);
}

TYPED_TEST(SqlDatabaseTest, OnConflictDoUpdateAccumulates) {
  this->Run("CREATE TABLE t (k TEXT PRIMARY KEY, n BIGINT NOT NULL)");
  const std::string upsert =
      "INSERT INTO t (k, n) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET n = t.n + excluded.n "
      "RETURNING n";
  EXPECT_EQ(this->One(upsert, {std::string("a"), std::int64_t{3}}), SqlValue(std::int64_t{3}));
  EXPECT_EQ(this->One(upsert, {std::string("a"), std::int64_t{4}}), SqlValue(std::int64_t{7}));
  EXPECT_EQ(this->One(upsert, {std::string("b"), std::int64_t{1}}), SqlValue(std::int64_t{1}));
  EXPECT_EQ(this->One(upsert, {std::string("a"), std::int64_t{-10}}), SqlValue(std::int64_t{-3}));
  EXPECT_EQ(this->One("SELECT n FROM t WHERE k = $1", {std::string("a")}),
            SqlValue(std::int64_t{-3}));
  EXPECT_EQ(this->Count("t"), 2);
}

TYPED_TEST(SqlDatabaseTest, RollbackDiscardsCommitKeeps) {
  this->Run("CREATE TABLE t (k BIGINT PRIMARY KEY)");
  ASSERT_TRUE(this->db_->Begin().ok());
  this->Run("INSERT INTO t (k) VALUES ($1)", {std::int64_t{1}});
  EXPECT_EQ(this->Count("t"), 1);  // visible inside the transaction
  this->db_->Rollback();
  EXPECT_EQ(this->Count("t"), 0);

  ASSERT_TRUE(this->db_->Begin().ok());
  this->Run("INSERT INTO t (k) VALUES ($1)", {std::int64_t{2}});
  this->Run("INSERT INTO t (k) VALUES ($1)", {std::int64_t{3}});
  Status commit = this->db_->Commit();
  ASSERT_TRUE(commit.ok()) << commit.ToString();
  EXPECT_EQ(this->Count("t"), 2);
  // Committed for every connection.
  auto other = this->Open();
  ASSERT_NE(other, nullptr);
  auto rows = other->Query("SELECT COUNT(*) FROM t");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(AsInt(rows->at(0).at(0)), 2);

  this->db_->Rollback();  // no transaction open: nothing happens
  EXPECT_EQ(this->Count("t"), 2);
}

TYPED_TEST(SqlDatabaseTest, ExecScriptRunsSeveralStatements) {
  Status script = this->db_->ExecScript(
      "CREATE TABLE a (k BIGINT PRIMARY KEY, s TEXT);\n"
      "CREATE TABLE b (k BIGINT PRIMARY KEY, x DOUBLE PRECISION);\n");
  ASSERT_TRUE(script.ok()) << script.ToString();
  this->Run("INSERT INTO a (k, s) VALUES ($1, $2)", {std::int64_t{1}, std::string("one")});
  this->Run("INSERT INTO b (k, x) VALUES ($1, $2)", {std::int64_t{1}, 1.5});
  EXPECT_EQ(this->One("SELECT a.s FROM a JOIN b ON a.k = b.k WHERE b.x > $1", {1.0}),
            SqlValue(std::string("one")));
  Status bad = this->db_->ExecScript("CREATE TABLE c (k BIGINT); CREAT TABLE d (k BIGINT);");
  EXPECT_EQ(bad.code(), StatusCode::kInternal) << bad.ToString();
}

TYPED_TEST(SqlDatabaseTest, SyntaxErrorIsInternalAndTheConnectionGoesOn) {
  auto bad = this->db_->Query("SELEC 1 FROM nowhere");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInternal);
  EXPECT_THAT(bad.status().message(), HasSubstr("syntax error"));
  // The same text again (the failed statement is not cached as prepared).
  bad = this->db_->Query("SELEC 1 FROM nowhere");
  EXPECT_EQ(bad.status().code(), StatusCode::kInternal);
  EXPECT_EQ(this->One("SELECT CAST($1 AS BIGINT)", {std::int64_t{7}}), SqlValue(std::int64_t{7}));

  auto missing = this->db_->Query("SELECT k FROM no_such_table");
  EXPECT_EQ(missing.status().code(), StatusCode::kInternal);
  EXPECT_THAT(missing.status().message(), HasSubstr("no_such_table"));
  // Once the table exists, the same text works.
  this->Run("CREATE TABLE no_such_table (k BIGINT)");
  EXPECT_TRUE(this->Run("SELECT k FROM no_such_table").empty());
}

TYPED_TEST(SqlDatabaseTest, ErrorInsideTransactionThenRollback) {
  this->Run("CREATE TABLE t (k BIGINT PRIMARY KEY)");
  ASSERT_TRUE(this->db_->Begin().ok());
  this->Run("INSERT INTO t (k) VALUES ($1)", {std::int64_t{1}});
  auto bad = this->db_->Query("SELEC 1");
  EXPECT_EQ(bad.status().code(), StatusCode::kInternal);
  auto duplicate = this->db_->Query("INSERT INTO t (k) VALUES ($1)", {std::int64_t{1}});
  EXPECT_EQ(duplicate.status().code(), StatusCode::kInternal);
  this->db_->Rollback();
  EXPECT_EQ(this->Count("t"), 0);
  // The connection works, transactions too.
  ASSERT_TRUE(this->db_->Begin().ok());
  this->Run("INSERT INTO t (k) VALUES ($1)", {std::int64_t{2}});
  ASSERT_TRUE(this->db_->Commit().ok());
  EXPECT_EQ(this->Count("t"), 1);
}

TYPED_TEST(SqlDatabaseTest, CommitAfterAFailedStatement) {
  this->Run("CREATE TABLE t (k BIGINT PRIMARY KEY)");
  ASSERT_TRUE(this->db_->Begin().ok());
  this->Run("INSERT INTO t (k) VALUES ($1)", {std::int64_t{1}});
  EXPECT_FALSE(this->db_->Query("SELEC 1").ok());
  Status commit = this->db_->Commit();
  if (this->db_->dialect() == SqlDialect::kPostgres) {
    // The error aborted the transaction: COMMIT rolls it back and says so.
    EXPECT_EQ(commit.code(), StatusCode::kInternal) << commit.ToString();
    EXPECT_EQ(this->Count("t"), 0);
  } else {
    // SQLite keeps the transaction: what succeeded commits.
    EXPECT_TRUE(commit.ok()) << commit.ToString();
    EXPECT_EQ(this->Count("t"), 1);
  }
  this->db_->Rollback();  // nothing open any more
  ASSERT_TRUE(this->db_->Begin().ok());
  ASSERT_TRUE(this->db_->Commit().ok());
}

TYPED_TEST(SqlDatabaseTest, ManyDistinctStatements) {
  // More distinct texts than the statement caches hold, inside and outside a transaction.
  ASSERT_TRUE(this->db_->Begin().ok());
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(this->One("SELECT CAST($1 AS BIGINT) + " + std::to_string(i), {std::int64_t{1}}),
              SqlValue(std::int64_t{i + 1}));
  }
  ASSERT_TRUE(this->db_->Commit().ok());
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 600; i += 7) {
      EXPECT_EQ(this->One("SELECT CAST($1 AS BIGINT) + " + std::to_string(i), {std::int64_t{2}}),
                SqlValue(std::int64_t{i + 2}));
    }
  }
}

TEST(OpenSqlDatabaseTest, UnknownUrlIsInvalidArgument) {
  auto db = OpenSqlDatabase("mysql://x");
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(db.status().message(), StartsWith("store"));
}

TEST(OpenSqlDatabaseTest, UnreachablePostgresIsUnavailable) {
  const std::string url =
      "postgresql://baton@127.0.0.1:" + std::to_string(FreeLoopbackPort()) + "/baton";
  auto db = OpenSqlDatabase(url);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), StatusCode::kUnavailable) << db.status().ToString();
  EXPECT_THAT(db.status().message(), StartsWith("store: "));
}

TEST(PostgresDatabaseTest, KilledServerIsUnavailable) {
  PostgresServer server;
  auto db = OpenSqlDatabase(server.url());
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  EXPECT_EQ((*db)->dialect(), SqlDialect::kPostgres);
  auto rows = (*db)->Query("SELECT CAST($1 AS BIGINT)", {std::int64_t{1}});
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();

  server.Kill();
  rows = (*db)->Query("SELECT CAST($1 AS BIGINT)", {std::int64_t{1}});  // a cached statement
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().code(), StatusCode::kUnavailable) << rows.status().ToString();
  EXPECT_THAT(rows.status().message(), StartsWith("store: "));
  // And from then on, whatever the call.
  EXPECT_EQ((*db)->Query("SELECT 2").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ((*db)->ExecScript("SELECT 3").code(), StatusCode::kUnavailable);
  EXPECT_EQ((*db)->Begin().code(), StatusCode::kUnavailable);
  (*db)->Rollback();
}

TEST(PostgresDatabaseTest, KilledServerInsideTransactionIsUnavailable) {
  PostgresServer server;
  auto db = OpenSqlDatabase(server.url());
  ASSERT_TRUE(db.ok()) << db.status().ToString();
  ASSERT_TRUE((*db)->ExecScript("CREATE TABLE t (k BIGINT PRIMARY KEY)").ok());
  ASSERT_TRUE((*db)->Begin().ok());
  ASSERT_TRUE((*db)->Query("INSERT INTO t (k) VALUES ($1)", {std::int64_t{1}}).ok());
  server.Kill();
  EXPECT_EQ((*db)->Commit().code(), StatusCode::kUnavailable);
  (*db)->Rollback();
}

}  // namespace
}  // namespace baton::collector
