#include "store_writer.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "run_time_histogram.h"
#include "store_schema.h"
#include "utc_day.h"

namespace baton::collector {
namespace {

using Counters = std::array<std::int64_t, kCounterColumns.size()>;

// Index of a counter in kCounterColumns (checked at compile time).
constexpr std::size_t Counter(std::string_view name) {
  for (std::size_t i = 0; i < kCounterColumns.size(); ++i) {
    if (kCounterColumns[i] == name) return i;
  }
  throw "unknown counter";
}

struct Rollup {
  Counters counters{};
  std::int64_t run_count = 0;
  std::int64_t run_sum_ms = 0;
  RunTimeCounts buckets{};

  void AddRun(std::int64_t ms) {
    ++run_count;
    run_sum_ms += ms;
    ++buckets[RunTimeBucket(ms)];
  }
};

// The counters one event row adds to.
void Classify(const EventRow& row, Counters& c) {
  const bool reclaim = row.worker == "reclaim";
  if (row.from == "new" && (row.to == "queued" || row.to == "scheduled")) {
    ++c[Counter("enqueued")];
  } else if (row.from == "queued" && row.to == "active") {
    ++c[Counter("started")];
  } else if (row.to == "done") {
    ++c[Counter("succeeded")];
  } else if (row.from == "active" && row.to == "retry") {
    ++c[Counter("failed")];
  } else if (row.from == "dead" && row.to == "queued") {
    ++c[Counter("replayed")];
  }
  if (row.to == "dead") ++c[Counter("dead")];
  if (row.from == "active" && reclaim && (row.to == "retry" || row.to == "dead")) {
    ++c[Counter("reclaimed")];
  }
  if (row.to == "cancelled") ++c[Counter("cancelled")];
  if (row.to == "deleted") ++c[Counter("deleted")];
  if (row.to == "dropped") ++c[Counter("dropped")];
}

bool IsRunStart(const EventRow& row) { return row.from == "queued" && row.to == "active"; }
bool IsRunEnd(const EventRow& row) {
  return row.from == "active" && (row.to == "done" || row.to == "retry" || row.to == "dead");
}

// Appends the counter, run and bucket values of `r` to `out` (the order of RollupColumns()).
void AppendRollup(const Rollup& r, SqlRow& out) {
  for (auto v : r.counters) out.emplace_back(v);
  out.emplace_back(r.run_count);
  out.emplace_back(r.run_sum_ms);
  for (auto v : r.buckets) out.emplace_back(v);
}

std::vector<std::string> RollupColumns() {
  std::vector<std::string> columns(kCounterColumns.begin(), kCounterColumns.end());
  columns.push_back("run_count");
  columns.push_back("run_sum_ms");
  for (std::size_t b = 0; b < kRunTimeBuckets; ++b) columns.push_back(BucketColumn(b));
  return columns;
}

// INSERT INTO table (keys..., rollup columns...) ... ON CONFLICT (keys) DO UPDATE adding them.
Status UpsertRollups(SqlDatabase& db, const std::string& table,
                     const std::vector<std::string>& keys, const std::vector<SqlRow>& rows) {
  if (rows.empty()) return Status::Ok();
  const auto columns = RollupColumns();
  std::string prefix = "INSERT INTO " + table + " (";
  std::string conflict;
  for (const auto& k : keys) {
    prefix += k + ", ";
    conflict += (conflict.empty() ? "" : ", ") + k;
  }
  std::string update;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    prefix += columns[i] + (i + 1 < columns.size() ? ", " : ")");
    update += (i ? ", " : "") + columns[i] + " = " + table + "." + columns[i] + " + excluded." +
              columns[i];
  }
  auto done = InsertMany(db, prefix, keys.size() + columns.size(), rows,
                         "ON CONFLICT (" + conflict + ") DO UPDATE SET " + update);
  return done.ok() ? Status::Ok() : done.status();
}

using EventKey = std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>;
using TaskKey = std::pair<std::string, std::string>;                // ns, task id
using RunKey = std::tuple<std::string, std::string, std::int64_t>;  // ns, task id, attempt

struct RunPart {
  std::string type;
  std::string worker;  // who ran it (the start's consumer; an end's when no start was seen)
  std::optional<std::int64_t> started_ms;
  std::optional<std::int64_t> ended_ms;
  std::string outcome;
  std::int64_t start_events = 0;
  std::int64_t end_events = 0;
};

SqlValue Optional(const std::optional<std::int64_t>& v) {
  return v ? SqlValue(*v) : SqlValue(std::monostate{});
}
SqlValue TextOrNull(const std::string& s) {
  return s.empty() ? SqlValue(std::monostate{}) : SqlValue(s);
}

}  // namespace

StatusOr<std::vector<SqlRow>> InsertMany(SqlDatabase& db, const std::string& prefix,
                                         std::size_t columns, const std::vector<SqlRow>& rows,
                                         const std::string& suffix) {
  // SQLite allows 32766 parameters per statement, PostgreSQL 65535: stay under both. Chunks are
  // powers of two, so that a table sees about ten distinct statement texts, each prepared once
  // and cached by both engines (a statement per row count would be prepared on every call).
  auto floor_pow2 = [](std::size_t n) {
    std::size_t p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
  };
  const std::size_t max_chunk =
      floor_pow2(std::max<std::size_t>(1, std::min<std::size_t>(512, 30000 / columns)));
  std::vector<SqlRow> returned;
  std::size_t n = 0;
  for (std::size_t start = 0; start < rows.size(); start += n) {
    n = floor_pow2(std::min(max_chunk, rows.size() - start));
    std::string sql = prefix + " VALUES ";
    std::vector<SqlValue> params;
    params.reserve(n * columns);
    std::size_t p = 0;
    for (std::size_t r = 0; r < n; ++r) {
      sql += r ? ",(" : "(";
      for (std::size_t c = 0; c < columns; ++c) {
        sql += (c ? ",$" : "$") + std::to_string(++p);
      }
      sql += ")";
      const SqlRow& row = rows[start + r];
      params.insert(params.end(), row.begin(), row.end());
    }
    if (!suffix.empty()) sql += " " + suffix;
    auto result = db.Query(sql, params);
    if (!result.ok()) return result.status();
    for (auto& row : *result) returned.push_back(std::move(row));
  }
  return returned;
}

StatusOr<IngestResult> StoreWriter::Ingest(const std::vector<EventRow>& rows) {
  IngestResult result;
  if (rows.empty()) return result;
  if (Status s = db_.Begin(); !s.ok()) return s;
  auto fail = [this](Status s) -> StatusOr<IngestResult> {
    db_.Rollback();
    return s;
  };

  // 1. The events: learn which rows are new.
  std::vector<SqlRow> values;
  values.reserve(rows.size());
  for (const auto& r : rows) {
    values.push_back({r.ns, r.entry_ms, r.entry_seq, r.idx, r.task_id, r.type, r.from, r.to,
                      r.attempt, r.worker, r.error, r.kind, r.stack});
  }
  auto inserted =
      InsertMany(db_,
                 "INSERT INTO events (ns, entry_ms, entry_seq, idx, task_id, type, "
                 "from_state, to_state, attempt, worker, error, kind, stack)",
                 13, values, "ON CONFLICT DO NOTHING RETURNING ns, entry_ms, entry_seq, idx");
  if (!inserted.ok()) return fail(inserted.status());
  std::set<EventKey> fresh_keys;
  for (const auto& k : *inserted) {
    fresh_keys.emplace(AsText(k[0]), AsInt(k[1]), AsInt(k[2]), AsInt(k[3]));
  }
  std::vector<const EventRow*> fresh;
  for (const auto& r : rows) {
    if (fresh_keys.erase(EventKey{r.ns, r.entry_ms, r.entry_seq, r.idx})) fresh.push_back(&r);
  }
  result.inserted = static_cast<std::int64_t>(fresh.size());
  result.duplicates = static_cast<std::int64_t>(rows.size()) - result.inserted;
  if (fresh.empty()) {
    if (Status s = db_.Commit(); !s.ok()) return fail(s);
    return result;
  }

  // 2. Counters, latest task states, run halves and workers, folded in memory first.
  std::map<std::tuple<std::string, std::string, std::int64_t>, Rollup> by_minute;
  std::map<TaskKey, Rollup> by_type;
  std::map<std::pair<std::string, std::string>, Rollup> by_day;
  std::map<TaskKey, const EventRow*> latest;
  std::map<RunKey, RunPart> runs;
  struct WorkerDelta {
    std::int64_t first_ms = INT64_MAX, last_ms = 0, started = 0, succeeded = 0, failed = 0;
  };
  std::map<std::tuple<std::string, std::string, std::string>, WorkerDelta> workers;
  for (const EventRow* r : fresh) {
    Counters c{};
    Classify(*r, c);
    auto add = [&c](Rollup& into) {
      for (std::size_t i = 0; i < c.size(); ++i) into.counters[i] += c[i];
    };
    add(by_minute[{r->ns, r->type, r->entry_ms / 60000}]);
    add(by_type[{r->ns, r->type}]);
    add(by_day[{r->ns, UtcDay(r->entry_ms)}]);

    auto& last = latest[{r->ns, r->task_id}];
    if (!last || std::tie(r->entry_ms, r->entry_seq, r->idx) >
                     std::tie(last->entry_ms, last->entry_seq, last->idx)) {
      last = r;
    }
    const bool reclaim = r->worker == "reclaim";
    if (IsRunStart(*r) || IsRunEnd(*r)) {
      RunPart& part = runs[{r->ns, r->task_id, r->attempt}];
      part.type = r->type;
      if (IsRunStart(*r)) {
        ++part.start_events;
        part.started_ms = r->entry_ms;
        part.worker = r->worker;
      } else {
        ++part.end_events;
        if (!part.ended_ms) {
          part.ended_ms = r->entry_ms;
          part.outcome = reclaim ? "lease_expired" : r->to;
        }
        if (part.worker.empty() && !reclaim) part.worker = r->worker;
      }
    }
    if (!r->worker.empty() && !reclaim) {
      auto& w = workers[{r->worker, r->ns, r->type}];
      w.first_ms = std::min(w.first_ms, r->entry_ms);
      w.last_ms = std::max(w.last_ms, r->entry_ms);
      if (IsRunStart(*r)) ++w.started;
      if (r->from == "active" && r->to == "done") ++w.succeeded;
      if (r->from == "active" && (r->to == "retry" || r->to == "dead")) ++w.failed;
    }
  }

  // 3. Runs: the write that completes a pair (whichever half came second, in this batch or an
  // earlier one) adds the run time; attempts taken back by the reaper are not runs that ended.
  if (!runs.empty()) {
    std::vector<SqlRow> run_rows;
    std::map<RunKey, std::pair<std::int64_t, std::int64_t>> contributed;
    for (const auto& [key, part] : runs) {
      const auto& [ns, id, attempt] = key;
      run_rows.push_back({ns, id, attempt, part.type, part.worker, Optional(part.started_ms),
                          Optional(part.ended_ms), TextOrNull(part.outcome), part.start_events,
                          part.end_events});
      contributed[key] = {part.start_events, part.end_events};
    }
    auto paired = InsertMany(
        db_,
        "INSERT INTO runs (ns, task_id, attempt, type, worker, started_ms, ended_ms, outcome, "
        "start_events, end_events)",
        10, run_rows,
        "ON CONFLICT (ns, task_id, attempt) DO UPDATE SET "
        "started_ms = COALESCE(runs.started_ms, excluded.started_ms), "
        "ended_ms = COALESCE(runs.ended_ms, excluded.ended_ms), "
        "outcome = COALESCE(runs.outcome, excluded.outcome), "
        "worker = CASE WHEN runs.worker = '' THEN excluded.worker ELSE runs.worker END, "
        "start_events = runs.start_events + excluded.start_events, "
        "end_events = runs.end_events + excluded.end_events "
        "RETURNING ns, task_id, attempt, type, started_ms, ended_ms, outcome, start_events, "
        "end_events");
    if (!paired.ok()) return fail(paired.status());
    for (const auto& row : *paired) {
      const RunKey key{AsText(row[0]), AsText(row[1]), AsInt(row[2])};
      const std::int64_t starts = AsInt(row[7]), ends = AsInt(row[8]);
      const auto [our_starts, our_ends] = contributed[key];
      const bool complete = starts >= 1 && ends >= 1;
      const bool was_complete = starts - our_starts >= 1 && ends - our_ends >= 1;
      if (!complete || was_complete || IsNull(row[4]) || IsNull(row[5])) continue;
      if (AsText(row[6]) == "lease_expired") continue;
      const std::int64_t ended = AsInt(row[5]);
      const std::int64_t ms = std::max<std::int64_t>(0, ended - AsInt(row[4]));
      const std::string& ns = std::get<0>(key);
      const std::string type = AsText(row[3]);
      by_minute[{ns, type, ended / 60000}].AddRun(ms);
      by_type[{ns, type}].AddRun(ms);
      by_day[{ns, UtcDay(ended)}].AddRun(ms);
    }
  }

  // 4. Rollups.
  std::vector<SqlRow> minute_rows, type_rows, day_rows;
  for (const auto& [key, r] : by_minute) {
    SqlRow row{std::get<0>(key), std::get<1>(key), std::get<2>(key)};
    AppendRollup(r, row);
    minute_rows.push_back(std::move(row));
  }
  for (const auto& [key, r] : by_type) {
    SqlRow row{key.first, key.second};
    AppendRollup(r, row);
    type_rows.push_back(std::move(row));
  }
  for (const auto& [key, r] : by_day) {
    SqlRow row{key.first, key.second};
    AppendRollup(r, row);
    day_rows.push_back(std::move(row));
  }
  if (Status s = UpsertRollups(db_, "minute_stats", {"ns", "type", "minute"}, minute_rows);
      !s.ok()) {
    return fail(s);
  }
  if (Status s = UpsertRollups(db_, "type_totals", {"ns", "type"}, type_rows); !s.ok()) {
    return fail(s);
  }
  if (Status s = UpsertRollups(db_, "daily_stats", {"ns", "day"}, day_rows); !s.ok()) {
    return fail(s);
  }

  // 5. Latest states (a newer event already stored wins).
  std::vector<SqlRow> state_rows;
  for (const auto& [key, r] : latest) {
    state_rows.push_back({r->ns, r->task_id, r->type, r->to, r->attempt, r->entry_ms, r->entry_seq,
                          r->idx, r->error, r->worker});
  }
  auto states = InsertMany(
      db_,
      "INSERT INTO task_state (ns, task_id, type, state, attempt, updated_ms, updated_seq, "
      "updated_idx, error, worker)",
      10, state_rows,
      "ON CONFLICT (ns, task_id) DO UPDATE SET type = excluded.type, state = excluded.state, "
      "attempt = excluded.attempt, updated_ms = excluded.updated_ms, "
      "updated_seq = excluded.updated_seq, updated_idx = excluded.updated_idx, "
      "error = CASE WHEN excluded.error = '' THEN task_state.error ELSE excluded.error END, "
      "worker = excluded.worker "
      "WHERE (excluded.updated_ms, excluded.updated_seq, excluded.updated_idx) > "
      "(task_state.updated_ms, task_state.updated_seq, task_state.updated_idx)");
  if (!states.ok()) return fail(states.status());

  // 6. Workers.
  std::vector<SqlRow> worker_rows;
  for (const auto& [key, w] : workers) {
    const auto& [name, ns, type] = key;
    const WorkerIdentity who = ParseWorkerName(name);
    worker_rows.push_back({name, ns, type, who.language, who.host, who.service, w.first_ms,
                           w.last_ms, std::int64_t{0}, std::int64_t{0}, w.started, w.succeeded,
                           w.failed});
  }
  auto stored_workers =
      InsertMany(db_,
                 "INSERT INTO workers (name, ns, type, language, host, service, first_seen_ms, "
                 "last_event_ms, last_live_ms, pending, started, succeeded, failed)",
                 13, worker_rows,
                 "ON CONFLICT (name, ns, type) DO UPDATE SET "
                 "first_seen_ms = CASE WHEN excluded.first_seen_ms < workers.first_seen_ms "
                 "THEN excluded.first_seen_ms ELSE workers.first_seen_ms END, "
                 "last_event_ms = CASE WHEN excluded.last_event_ms > workers.last_event_ms "
                 "THEN excluded.last_event_ms ELSE workers.last_event_ms END, "
                 "started = workers.started + excluded.started, "
                 "succeeded = workers.succeeded + excluded.succeeded, "
                 "failed = workers.failed + excluded.failed");
  if (!stored_workers.ok()) return fail(stored_workers.status());

  if (Status s = db_.Commit(); !s.ok()) return fail(s);
  return result;
}

Status StoreWriter::WriteSamples(const std::vector<QueueSample>& queues,
                                 const std::vector<ConsumerSample>& consumers) {
  if (queues.empty() && consumers.empty()) return Status::Ok();
  if (Status s = db_.Begin(); !s.ok()) return s;
  std::vector<SqlRow> rows;
  for (const auto& q : queues) {
    rows.push_back({q.ns, q.type, q.at_ms, q.ready, q.in_flight, q.delayed, q.retrying, q.dead,
                    q.consumers, q.live_consumers});
  }
  auto written = InsertMany(db_,
                            "INSERT INTO queue_samples (ns, type, at_ms, ready, in_flight, "
                            "delayed, retrying, dead, consumers, live_consumers)",
                            10, rows,
                            "ON CONFLICT (ns, type, at_ms) DO UPDATE SET ready = excluded.ready, "
                            "in_flight = excluded.in_flight, delayed = excluded.delayed, "
                            "retrying = excluded.retrying, dead = excluded.dead, "
                            "consumers = excluded.consumers, "
                            "live_consumers = excluded.live_consumers");
  if (written.ok() && !consumers.empty()) {
    std::vector<SqlRow> worker_rows;
    for (const auto& c : consumers) {
      const WorkerIdentity who = ParseWorkerName(c.name);
      worker_rows.push_back({c.name, c.ns, c.type, who.language, who.host, who.service,
                             c.last_live_ms, std::int64_t{0}, c.last_live_ms, c.pending,
                             std::int64_t{0}, std::int64_t{0}, std::int64_t{0}});
    }
    written =
        InsertMany(db_,
                   "INSERT INTO workers (name, ns, type, language, host, service, first_seen_ms, "
                   "last_event_ms, last_live_ms, pending, started, succeeded, failed)",
                   13, worker_rows,
                   "ON CONFLICT (name, ns, type) DO UPDATE SET pending = excluded.pending, "
                   "last_live_ms = CASE WHEN excluded.last_live_ms > workers.last_live_ms "
                   "THEN excluded.last_live_ms ELSE workers.last_live_ms END");
  }
  if (!written.ok()) {
    db_.Rollback();
    return written.status();
  }
  return db_.Commit();
}

Status StoreWriter::RecordGap(const std::string& ns, std::int64_t now_ms, std::int64_t lost_total,
                              const std::string& after_entry) {
  auto previous = LostTotal(ns);
  if (!previous.ok()) return previous.status();
  if (lost_total <= *previous) return Status::Ok();
  auto written = db_.Query(
      "INSERT INTO event_gaps (ns, detected_ms, lost, lost_total, after_entry) "
      "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (ns, lost_total) DO NOTHING",
      {ns, now_ms, lost_total - *previous, lost_total, after_entry});
  return written.ok() ? Status::Ok() : written.status();
}

StatusOr<std::int64_t> StoreWriter::LostTotal(const std::string& ns) {
  auto rows = db_.Query("SELECT COALESCE(MAX(lost_total), 0) FROM event_gaps WHERE ns = $1", {ns});
  if (!rows.ok()) return rows.status();
  return AsInt((*rows)[0][0]);
}

Status StoreWriter::RecordRejected(const std::string& ns, const std::string& entry_id,
                                   const std::string& reason, const std::string& fields_json,
                                   std::int64_t now_ms) {
  auto written = db_.Query(
      "INSERT INTO rejected_events (ns, entry_id, reason, fields, seen_ms) "
      "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (ns, entry_id) DO NOTHING",
      {ns, entry_id, reason, fields_json, now_ms});
  return written.ok() ? Status::Ok() : written.status();
}

}  // namespace baton::collector
