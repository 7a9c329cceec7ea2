#include "postgres_database.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <pqxx/pqxx>

namespace baton::collector {
namespace {

// Column type OIDs (pg_type.oid, fixed in every PostgreSQL release).
constexpr pqxx::oid kInt8Oid = 20;
constexpr pqxx::oid kInt2Oid = 21;
constexpr pqxx::oid kInt4Oid = 23;
constexpr pqxx::oid kFloat4Oid = 700;
constexpr pqxx::oid kFloat8Oid = 701;
constexpr pqxx::oid kNumericOid = 1700;

// Multi-row inserts come in many sizes; keep the statement cache bounded.
constexpr std::size_t kMaxStatements = 256;

// A one-line message from libpq's or the server's text: the first line ("ERROR:  ...") and any
// DETAIL/HINT lines, without the LINE/caret context, whitespace runs collapsed.
std::string OneLine(std::string_view text) {
  std::string out;
  std::size_t start = 0;
  bool first = true;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    const bool keep = first || line.starts_with("DETAIL:") || line.starts_with("HINT:");
    first = false;
    if (!keep) continue;
    for (char c : line) {
      const bool space = c == ' ' || c == '\t' || c == '\r';
      if (space && (out.empty() || out.back() == ' ')) continue;
      out.push_back(space ? ' ' : c);
    }
    if (!out.empty() && out.back() != ' ') out.push_back(' ');
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string DoubleText(double d) {
  // PostgreSQL's float8 and numeric input both take these spellings.
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);  // shortest exact form
  return std::string(buf, ec == std::errc() ? end : buf);
}

SqlValue IntValue(const char* text, std::size_t size) {
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(text, text + size, n);
  if (ec != std::errc() || end != text + size) return std::string(text, size);
  return n;
}

SqlValue DoubleValue(const char* text, std::size_t size) {
  double d = 0;
  auto [end, ec] = std::from_chars(text, text + size, d);  // also NaN, Infinity, -Infinity
  if (ec == std::errc() && end == text + size) return d;
  return std::strtod(text, nullptr);  // out of double's range (numeric): +-HUGE_VAL or 0
}

class PostgresDatabase final : public SqlDatabase {
 public:
  explicit PostgresDatabase(std::unique_ptr<pqxx::connection> conn) : conn_(std::move(conn)) {}

  SqlDialect dialect() const override { return SqlDialect::kPostgres; }

  StatusOr<std::vector<SqlRow>> Query(std::string_view sql,
                                      const std::vector<SqlValue>& params) override {
    if (!lost_.empty()) return Lost();
    // libpq takes NUL-terminated text values; null is a null pointer.
    std::vector<std::string> texts(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (std::size_t i = 0; i < params.size(); ++i) {
      const SqlValue& v = params[i];
      if (IsNull(v)) continue;
      if (const auto* n = std::get_if<std::int64_t>(&v)) {
        texts[i] = std::to_string(*n);
      } else if (const auto* d = std::get_if<double>(&v)) {
        texts[i] = DoubleText(*d);
      } else {
        texts[i] = std::get<std::string>(v);
        if (texts[i].find('\0') != std::string::npos) {
          return Status::Internal("postgres: parameter $" + std::to_string(i + 1) +
                                  ": text holds a NUL byte, which PostgreSQL cannot store");
        }
      }
      values[i] = texts[i].c_str();
    }
    try {
      const std::string& name = Prepare(sql);
      pqxx::nontransaction tx(*conn_);
      const pqxx::result result =
          tx.exec_prepared(name, pqxx::prepare::make_dynamic_params(values));
      return Rows(result);
    } catch (...) {
      return Failure();
    }
  }

  Status ExecScript(std::string_view sql) override { return Exec(sql); }

  Status Begin() override {
    Status status = Exec("BEGIN");
    if (status.ok()) {
      in_transaction_ = true;
      failed_in_transaction_ = false;
    }
    return status;
  }

  Status Commit() override {
    if (failed_in_transaction_) {
      // An error aborted the transaction on the server (COMMIT would roll it back without an
      // error): end it and say so.
      Rollback();
      return Status::Internal(
          "postgres: transaction rolled back: one of its statements had failed");
    }
    Status status = Exec("COMMIT");
    in_transaction_ = false;  // COMMIT ends the transaction, whatever it answers
    return status;
  }

  void Rollback() override {
    if (!in_transaction_) return;
    in_transaction_ = false;
    failed_in_transaction_ = false;
    (void)Exec("ROLLBACK");
  }

 private:
  // Runs `sql` (parameterless, possibly several statements).
  Status Exec(std::string_view sql) {
    if (!lost_.empty()) return Lost();
    try {
      pqxx::nontransaction tx(*conn_);
      tx.exec(std::string(sql));
      return Status::Ok();
    } catch (...) {
      return Failure();
    }
  }

  // The server-side name of `sql`'s prepared statement, preparing it on first use. Throws pqxx
  // errors (syntax errors show here).
  const std::string& Prepare(std::string_view sql) {
    auto it = statements_.find(sql);
    if (it != statements_.end()) return it->second;
    // DEALLOCATE fails in a transaction that an error aborted: evict outside transactions only.
    if (statements_.size() >= kMaxStatements && !in_transaction_) {
      auto names = std::move(statements_);
      statements_.clear();
      for (auto& [text, old] : names) conn_->unprepare(old);
    }
    std::string name = "baton_" + std::to_string(++statement_count_);
    std::string text(sql);
    conn_->prepare(name, text);
    try {
      conn_->prepare_now(name);
    } catch (...) {
      conn_->unprepare(name);  // never registered with the server: only forgets the definition
      throw;
    }
    return statements_.emplace(std::move(text), std::move(name)).first->second;
  }

  static std::vector<SqlRow> Rows(const pqxx::result& result) {
    const auto columns = result.columns();
    std::vector<pqxx::oid> types(columns);
    for (pqxx::row_size_type c = 0; c < columns; ++c) types[c] = result.column_type(c);
    std::vector<SqlRow> rows;
    rows.reserve(result.size());
    for (const auto& r : result) {
      SqlRow row;
      row.reserve(columns);
      for (pqxx::row_size_type c = 0; c < columns; ++c) {
        const pqxx::field f = r[c];
        if (f.is_null()) {
          row.emplace_back(std::monostate{});
          continue;
        }
        switch (types[c]) {
          case kInt2Oid:
          case kInt4Oid:
          case kInt8Oid:
            row.push_back(IntValue(f.c_str(), f.size()));
            break;
          case kFloat4Oid:
          case kFloat8Oid:
          case kNumericOid:
            row.push_back(DoubleValue(f.c_str(), f.size()));
            break;
          default:
            row.emplace_back(std::string(f.c_str(), f.size()));
        }
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

  // The Status of the exception being handled (call from a catch block only).
  Status Failure() {
    std::string message;
    bool broken = false;
    try {
      throw;
    } catch (const pqxx::broken_connection& e) {
      message = OneLine(e.what());
      broken = true;
    } catch (const std::exception& e) {
      message = OneLine(e.what());
    } catch (...) {
      message = "unknown error";
    }
    // A lost connection may also surface as another pqxx error (a null result, a failed read).
    if (broken || !conn_->is_open()) {
      lost_ = "store: connection to PostgreSQL lost: " +
              (message.empty() ? std::string("no connection") : message);
      in_transaction_ = false;
      statements_.clear();
      return Lost();
    }
    if (in_transaction_) failed_in_transaction_ = true;
    return Status::Internal("postgres: " + message);
  }

  Status Lost() const { return Status::Unavailable(lost_); }

  std::unique_ptr<pqxx::connection> conn_;
  std::map<std::string, std::string, std::less<>> statements_;  // SQL text -> statement name
  std::uint64_t statement_count_ = 0;
  bool in_transaction_ = false;
  bool failed_in_transaction_ = false;  // the server aborted the open transaction
  // Not empty once the connection broke: libpqxx would reconnect silently on the next call, out of
  // the transaction the caller believes open, so this object stays unusable instead.
  std::string lost_;
};

}  // namespace

StatusOr<std::unique_ptr<SqlDatabase>> OpenPostgresDatabase(const std::string& url) {
  try {
    auto conn = std::make_unique<pqxx::connection>(url);
    // SqlValue text is UTF-8 whatever the database's encoding; the server converts.
    conn->set_client_encoding("UTF8");
    return std::unique_ptr<SqlDatabase>(std::make_unique<PostgresDatabase>(std::move(conn)));
  } catch (const pqxx::broken_connection& e) {
    return Status::Unavailable("store: cannot connect to PostgreSQL: " + OneLine(e.what()));
  } catch (const std::exception& e) {
    return Status::Internal("postgres: " + OneLine(e.what()));
  } catch (...) {
    return Status::Internal("postgres: unknown error");
  }
}

}  // namespace baton::collector
