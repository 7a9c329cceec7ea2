#include "sql_database.h"

#include <charconv>
#include <cstdlib>

namespace baton::collector {

std::int64_t AsInt(const SqlValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) return static_cast<std::int64_t>(*d);
  if (const auto* s = std::get_if<std::string>(&v)) {
    std::int64_t out = 0;
    std::from_chars(s->data(), s->data() + s->size(), out);
    return out;
  }
  return 0;
}

double AsDouble(const SqlValue& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* s = std::get_if<std::string>(&v)) return std::strtod(s->c_str(), nullptr);
  return 0;
}

std::string AsText(const SqlValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return std::to_string(*d);
  return "";
}

StatusOr<std::unique_ptr<SqlDatabase>> OpenSqlDatabase(const std::string& url) {
  auto starts = [&url](std::string_view prefix) { return url.rfind(prefix, 0) == 0; };
  auto ends = [&url](std::string_view suffix) {
    return url.size() >= suffix.size() &&
           url.compare(url.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (starts("postgresql://") || starts("postgres://")) return OpenPostgresDatabase(url);
  if (starts("sqlite://")) {
    std::string path = url.substr(std::string_view("sqlite://").size());
    if (path.empty()) return Status::InvalidArgument("store", "sqlite:// needs a file path");
    return OpenSqliteDatabase(path);
  }
  if (url.find("://") == std::string::npos && (ends(".db") || ends(".sqlite"))) {
    return OpenSqliteDatabase(url);
  }
  return Status::InvalidArgument(
      "store",
      "must be sqlite:///path/file.db, a path ending in .db or .sqlite, or "
      "postgresql://user:password@host:port/dbname");
}

}  // namespace baton::collector
