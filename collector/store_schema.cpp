#include "store_schema.h"

#include <vector>

#include "run_time_histogram.h"

namespace baton::collector {
namespace {

std::string CounterColumnsSql() {
  std::string sql;
  for (auto name : kCounterColumns) sql += std::string(name) + " BIGINT NOT NULL DEFAULT 0, ";
  sql += "run_count BIGINT NOT NULL DEFAULT 0, run_sum_ms BIGINT NOT NULL DEFAULT 0, ";
  for (std::size_t b = 0; b < kRunTimeBuckets; ++b) {
    sql += BucketColumn(b) + " BIGINT NOT NULL DEFAULT 0, ";
  }
  return sql;
}

// Version 1: the first schema. Times are Unix ms (BIGINT), days 'YYYY-MM-DD' (UTC).
std::string Version1() {
  const std::string counters = CounterColumnsSql();
  return
      // Every task's share of every event: the timelines.
      "CREATE TABLE events ("
      " ns TEXT NOT NULL, entry_ms BIGINT NOT NULL, entry_seq BIGINT NOT NULL, idx BIGINT NOT NULL,"
      " task_id TEXT NOT NULL, type TEXT NOT NULL, from_state TEXT NOT NULL,"
      " to_state TEXT NOT NULL, attempt BIGINT NOT NULL, worker TEXT NOT NULL,"
      " error TEXT NOT NULL, kind TEXT NOT NULL, stack TEXT NOT NULL,"
      " PRIMARY KEY (ns, entry_ms, entry_seq, idx));"
      "CREATE INDEX events_by_task ON events (task_id, entry_ms);"
      "CREATE INDEX events_by_time ON events (entry_ms);"
      // Each attempt's start and end, paired whichever event arrives first.
      "CREATE TABLE runs ("
      " ns TEXT NOT NULL, task_id TEXT NOT NULL, attempt BIGINT NOT NULL, type TEXT NOT NULL,"
      " worker TEXT NOT NULL, started_ms BIGINT, ended_ms BIGINT, outcome TEXT,"
      " start_events BIGINT NOT NULL, end_events BIGINT NOT NULL,"
      " PRIMARY KEY (ns, task_id, attempt));"
      "CREATE INDEX runs_by_start ON runs (started_ms);"
      // Each task's latest state (dead-letter search).
      "CREATE TABLE task_state ("
      " ns TEXT NOT NULL, task_id TEXT NOT NULL, type TEXT NOT NULL, state TEXT NOT NULL,"
      " attempt BIGINT NOT NULL, updated_ms BIGINT NOT NULL, updated_seq BIGINT NOT NULL,"
      " updated_idx BIGINT NOT NULL, error TEXT NOT NULL, worker TEXT NOT NULL,"
      " PRIMARY KEY (ns, task_id));"
      "CREATE INDEX task_state_by_state ON task_state (state, ns, type, updated_ms);"
      // The dead-letter search across namespaces reads newest first and stops at its limit.
      "CREATE INDEX task_state_by_state_time ON task_state (state, updated_ms);"
      "CREATE TABLE minute_stats (ns TEXT NOT NULL, type TEXT NOT NULL, minute BIGINT NOT NULL, " +
      counters +
      " PRIMARY KEY (ns, type, minute));"
      "CREATE INDEX minute_stats_by_minute ON minute_stats (minute);"
      "CREATE TABLE type_totals (ns TEXT NOT NULL, type TEXT NOT NULL, " +
      counters +
      " PRIMARY KEY (ns, type));"
      "CREATE TABLE daily_stats (ns TEXT NOT NULL, day TEXT NOT NULL, " +
      counters +
      " PRIMARY KEY (ns, day));"
      // Workers seen in events (per namespace and type) and in the sampled consumer groups.
      "CREATE TABLE workers ("
      " name TEXT NOT NULL, ns TEXT NOT NULL, type TEXT NOT NULL, language TEXT NOT NULL,"
      " host TEXT NOT NULL, service TEXT NOT NULL, first_seen_ms BIGINT NOT NULL,"
      " last_event_ms BIGINT NOT NULL, last_live_ms BIGINT NOT NULL,"
      " pending BIGINT NOT NULL, started BIGINT NOT NULL, succeeded BIGINT NOT NULL,"
      " failed BIGINT NOT NULL, PRIMARY KEY (name, ns, type));"
      // The queues as the collector sampled them.
      "CREATE TABLE queue_samples ("
      " ns TEXT NOT NULL, type TEXT NOT NULL, at_ms BIGINT NOT NULL, ready BIGINT NOT NULL,"
      " in_flight BIGINT NOT NULL, delayed BIGINT NOT NULL, retrying BIGINT NOT NULL,"
      " dead BIGINT NOT NULL, consumers BIGINT NOT NULL, live_consumers BIGINT NOT NULL,"
      " PRIMARY KEY (ns, type, at_ms));"
      "CREATE INDEX queue_samples_by_time ON queue_samples (at_ms);"
      // Events trimmed from a stream before any collector read them.
      "CREATE TABLE event_gaps ("
      " ns TEXT NOT NULL, detected_ms BIGINT NOT NULL, lost BIGINT NOT NULL,"
      " lost_total BIGINT NOT NULL, after_entry TEXT NOT NULL, PRIMARY KEY (ns, lost_total));"
      // Entries of an events stream that are not well-formed events, with the reason.
      "CREATE TABLE rejected_events ("
      " ns TEXT NOT NULL, entry_id TEXT NOT NULL, reason TEXT NOT NULL, fields TEXT NOT NULL,"
      " seen_ms BIGINT NOT NULL, PRIMARY KEY (ns, entry_id));";
}

// Version 2: the console's audit log (docs/console.md): who did what to which tasks, and when.
std::string Version2() {
  return "CREATE TABLE audit_log ("
         " at_ms BIGINT NOT NULL, id TEXT NOT NULL, user_name TEXT NOT NULL, role TEXT NOT NULL,"
         " action TEXT NOT NULL, ns TEXT NOT NULL, target TEXT NOT NULL, task_ids TEXT NOT NULL,"
         " outcome TEXT NOT NULL, detail TEXT NOT NULL, remote TEXT NOT NULL,"
         " PRIMARY KEY (at_ms, id));";
}

const std::vector<std::string>& Migrations() {
  static const std::vector<std::string> migrations = {Version1(), Version2()};
  return migrations;
}

}  // namespace

int CurrentSchemaVersion() { return static_cast<int>(Migrations().size()); }

namespace {

Status MigrateUnderLock(SqlDatabase& db) {
  if (Status s = db.ExecScript("CREATE TABLE IF NOT EXISTS baton_schema (version BIGINT NOT NULL)");
      !s.ok()) {
    return s;
  }
  for (;;) {
    if (Status s = db.Begin(); !s.ok()) return s;
    auto rows = db.Query("SELECT COALESCE(MAX(version), 0) FROM baton_schema");
    if (!rows.ok()) {
      db.Rollback();
      return rows.status();
    }
    const auto version = static_cast<int>(AsInt((*rows)[0][0]));
    if (version > CurrentSchemaVersion()) {
      db.Rollback();
      return Status::Conflict("store: schema version " + std::to_string(version) +
                              " was written by a newer baton-collector (this one knows up to " +
                              std::to_string(CurrentSchemaVersion()) + "); upgrade it");
    }
    if (version == CurrentSchemaVersion()) {
      db.Rollback();
      return Status::Ok();
    }
    // Another collector may migrate at the same time: the transaction (and, on PostgreSQL, the
    // table lock) makes one of them do it and the other see the result.
    if (db.dialect() == SqlDialect::kPostgres) {
      if (auto lock = db.Query("LOCK TABLE baton_schema IN EXCLUSIVE MODE"); !lock.ok()) {
        db.Rollback();
        return lock.status();
      }
      auto again = db.Query("SELECT COALESCE(MAX(version), 0) FROM baton_schema");
      if (!again.ok() || AsInt((*again)[0][0]) != version) {
        db.Rollback();
        if (!again.ok()) return again.status();
        continue;
      }
    }
    Status applied = db.ExecScript(Migrations()[version]);
    if (applied.ok()) {
      auto mark = db.Query("INSERT INTO baton_schema (version) VALUES ($1)",
                           {static_cast<std::int64_t>(version + 1)});
      if (!mark.ok()) applied = mark.status();
    }
    if (!applied.ok()) {
      db.Rollback();
      return Status::Internal("store: migration to version " + std::to_string(version + 1) +
                              " failed: " + applied.message());
    }
    if (Status s = db.Commit(); !s.ok()) return s;
  }
}

}  // namespace

Status MigrateStore(SqlDatabase& db) {
  if (db.dialect() != SqlDialect::kPostgres) return MigrateUnderLock(db);
  // Collectors starting together on a new PostgreSQL database would race in CREATE TABLE (two
  // concurrent CREATE TABLE IF NOT EXISTS can both try to create the table's type and one fails):
  // a session-level advisory lock makes them migrate one after the other.
  constexpr std::int64_t kMigrationLock = 0x6261746f6e;  // "baton"
  if (auto locked = db.Query("SELECT CAST(pg_advisory_lock($1) AS TEXT)", {kMigrationLock});
      !locked.ok()) {
    return locked.status();
  }
  Status migrated = MigrateUnderLock(db);
  (void)db.Query("SELECT CAST(pg_advisory_unlock($1) AS TEXT)", {kMigrationLock});
  return migrated;
}

}  // namespace baton::collector
