#include "sqlite_database.h"

#include <sqlite3.h>

#include <cctype>
#include <map>

namespace baton::collector {
namespace {

class SqliteDatabase final : public SqlDatabase {
 public:
  explicit SqliteDatabase(sqlite3* db) : db_(db) {}
  ~SqliteDatabase() override {
    for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
    sqlite3_close(db_);
  }

  SqlDialect dialect() const override { return SqlDialect::kSqlite; }

  StatusOr<std::vector<SqlRow>> Query(std::string_view sql,
                                      const std::vector<SqlValue>& params) override {
    auto stmt = Prepare(sql);
    if (!stmt.ok()) return stmt.status();
    sqlite3_stmt* s = *stmt;
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    // `$N` was prepared as `?N` (see Prepare): parameter N binds at index N.
    const auto declared = static_cast<std::size_t>(sqlite3_bind_parameter_count(s));
    for (std::size_t i = 0; i < params.size() && i < declared; ++i) {
      const int index = static_cast<int>(i + 1);
      const SqlValue& v = params[i];
      int rc = SQLITE_OK;
      if (IsNull(v)) {
        rc = sqlite3_bind_null(s, index);
      } else if (const auto* n = std::get_if<std::int64_t>(&v)) {
        rc = sqlite3_bind_int64(s, index, *n);
      } else if (const auto* d = std::get_if<double>(&v)) {
        rc = sqlite3_bind_double(s, index, *d);
      } else {
        const auto& text = std::get<std::string>(v);
        rc = sqlite3_bind_text(s, index, text.data(), static_cast<int>(text.size()),
                               SQLITE_TRANSIENT);
      }
      if (rc != SQLITE_OK) return Error("bind");
    }
    std::vector<SqlRow> rows;
    for (;;) {
      const int rc = sqlite3_step(s);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) {
        Status error = Error("query");
        sqlite3_reset(s);
        return error;
      }
      const int columns = sqlite3_column_count(s);
      SqlRow row;
      row.reserve(columns);
      for (int c = 0; c < columns; ++c) {
        switch (sqlite3_column_type(s, c)) {
          case SQLITE_INTEGER:
            row.emplace_back(static_cast<std::int64_t>(sqlite3_column_int64(s, c)));
            break;
          case SQLITE_FLOAT:
            row.emplace_back(sqlite3_column_double(s, c));
            break;
          case SQLITE_NULL:
            row.emplace_back(std::monostate{});
            break;
          default: {
            const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s, c));
            row.emplace_back(std::string(text ? text : "", sqlite3_column_bytes(s, c)));
          }
        }
      }
      rows.push_back(std::move(row));
    }
    sqlite3_reset(s);
    return rows;
  }

  Status ExecScript(std::string_view sql) override {
    char* message = nullptr;
    const std::string text(sql);
    if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      std::string why = message ? message : "unknown error";
      sqlite3_free(message);
      return Status::Internal("sqlite: " + why);
    }
    return Status::Ok();
  }

  Status Begin() override { return ExecScript("BEGIN IMMEDIATE"); }
  Status Commit() override { return ExecScript("COMMIT"); }
  void Rollback() override {
    if (!sqlite3_get_autocommit(db_)) (void)ExecScript("ROLLBACK");
  }

 private:
  StatusOr<sqlite3_stmt*> Prepare(std::string_view sql) {
    std::string key(sql);
    auto it = statements_.find(key);
    if (it != statements_.end()) return it->second;
    // To SQLite `$1` is a parameter *named* "$1", found by a linear search of the statement's
    // names at bind time (quadratic for a many-row insert); `?1` is the same placeholder by
    // number. The store's SQL has no `$` inside string literals.
    std::string text = key;
    for (std::size_t i = 0; i + 1 < text.size(); ++i) {
      if (text[i] == '$' && std::isdigit(static_cast<unsigned char>(text[i + 1]))) text[i] = '?';
    }
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, text.c_str(), static_cast<int>(text.size()), &stmt, nullptr) !=
        SQLITE_OK) {
      return Error("prepare");
    }
    // Multi-row inserts come in many sizes; keep the cache bounded.
    if (statements_.size() > 256) {
      for (auto& [text, old] : statements_) sqlite3_finalize(old);
      statements_.clear();
    }
    statements_.emplace(std::move(key), stmt);
    return stmt;
  }

  Status Error(std::string_view what) const {
    return Status::Internal("sqlite " + std::string(what) + ": " + sqlite3_errmsg(db_));
  }

  sqlite3* db_;
  std::map<std::string, sqlite3_stmt*, std::less<>> statements_;
};

}  // namespace

StatusOr<std::unique_ptr<SqlDatabase>> OpenSqliteDatabase(const std::string& path) {
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status::Unavailable("store: cannot open SQLite file " + path + ": " + why);
  }
  // Another collector (or the API thread) may hold the write lock for one batch: wait for it.
  sqlite3_busy_timeout(db, 10000);
  auto database = std::make_unique<SqliteDatabase>(db);
  Status pragmas = database->ExecScript(
      "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF; "
      "PRAGMA wal_autocheckpoint=16384;");
  if (!pragmas.ok()) return Status::Unavailable("store: " + pragmas.message());
  return std::unique_ptr<SqlDatabase>(std::move(database));
}

}  // namespace baton::collector
