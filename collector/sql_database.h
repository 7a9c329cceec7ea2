#pragma once
// The collector's store speaks SQL through this one small interface, so that the schema, the
// migrations, the ingest and every API query are written once (portable SQL: `$1`, `$2`, ...
// placeholders, `INSERT ... ON CONFLICT ... DO UPDATE/NOTHING`, `RETURNING`), and a new engine is
// one more implementation of SqlDatabase (docs/adr/0005-collector-store.md).
// Implementations: SQLite (sqlite_database.h) and PostgreSQL (postgres_database.h).
// Not thread-safe: one SqlDatabase per thread.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "baton/status.h"

namespace baton::collector {

// A parameter or a column value. Integers are 64-bit; text is UTF-8 (bytes kept as given).
using SqlValue = std::variant<std::monostate, std::int64_t, double, std::string>;
using SqlRow = std::vector<SqlValue>;

inline bool IsNull(const SqlValue& v) { return std::holds_alternative<std::monostate>(v); }
// The value as an integer (text holding an integer is converted; null and other text: 0).
std::int64_t AsInt(const SqlValue& v);
// The value as a double (integers and numeric text converted; null: 0).
double AsDouble(const SqlValue& v);
// The value as text (integers in decimal; null: "").
std::string AsText(const SqlValue& v);

enum class SqlDialect { kSqlite, kPostgres };

class SqlDatabase {
 public:
  virtual ~SqlDatabase() = default;
  virtual SqlDialect dialect() const = 0;

  // Runs one statement with `$1`..`$N` placeholders bound to `params` (in order) and returns its
  // rows (none for statements without a result). Errors: kUnavailable when the server cannot be
  // reached (PostgreSQL; the caller retries with a new connection), kInternal otherwise, with the
  // engine's message.
  virtual StatusOr<std::vector<SqlRow>> Query(std::string_view sql,
                                              const std::vector<SqlValue>& params = {}) = 0;
  // Runs a script of several statements without parameters (migrations).
  virtual Status ExecScript(std::string_view sql) = 0;

  // A write transaction (SQLite: BEGIN IMMEDIATE, so that concurrent writers queue instead of
  // failing at commit). Nested calls are not supported.
  virtual Status Begin() = 0;
  virtual Status Commit() = 0;
  virtual void Rollback() = 0;  // best effort; never throws
};

// Opens a store by URL:
//   sqlite:///absolute/path.db, sqlite://relative/path.db, or a plain path ending in .db/.sqlite
//   postgresql://user:password@host:port/dbname (also postgres://; libpq's URI syntax)
// Errors: kInvalidArgument "store: <rule>" for a URL of no known kind; kUnavailable when the
// database cannot be opened or reached.
StatusOr<std::unique_ptr<SqlDatabase>> OpenSqlDatabase(const std::string& url);

// Opens a PostgreSQL database (postgres_database.cpp): `url` is a libpq connection URI.
StatusOr<std::unique_ptr<SqlDatabase>> OpenPostgresDatabase(const std::string& url);
// Opens (creating it when missing) an SQLite file in WAL mode (sqlite_database.cpp).
StatusOr<std::unique_ptr<SqlDatabase>> OpenSqliteDatabase(const std::string& path);

}  // namespace baton::collector
