#include "store_queries.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "event_row.h"
#include "run_time_histogram.h"
#include "store_schema.h"
#include "utc_day.h"

namespace baton::collector {
namespace {

using nlohmann::json;

// SELECT list of the rollup columns summed: "SUM(enqueued), ..., SUM(h16)".
std::string SummedRollup() {
  std::string sql;
  for (auto c : kCounterColumns) sql += "SUM(" + std::string(c) + "), ";
  sql += "SUM(run_count), SUM(run_sum_ms)";
  for (std::size_t b = 0; b < kRunTimeBuckets; ++b) sql += ", SUM(" + BucketColumn(b) + ")";
  return sql;
}
// The same columns of one row, where the key already makes the row unique (a minute of a type).
std::string RollupColumns() {
  std::string sql;
  for (auto c : kCounterColumns) sql += std::string(c) + ", ";
  sql += "run_count, run_sum_ms";
  for (std::size_t b = 0; b < kRunTimeBuckets; ++b) sql += ", " + BucketColumn(b);
  return sql;
}
constexpr std::size_t kRollupWidth = kCounterColumns.size() + 2 + kRunTimeBuckets;

// The JSON of the rollup columns starting at `row[first]`.
json RollupJson(const SqlRow& row, std::size_t first) {
  json out = json::object();
  for (std::size_t i = 0; i < kCounterColumns.size(); ++i) {
    out[std::string(kCounterColumns[i])] = AsInt(row[first + i]);
  }
  const std::int64_t runs = AsInt(row[first + kCounterColumns.size()]);
  const std::int64_t sum = AsInt(row[first + kCounterColumns.size() + 1]);
  RunTimeCounts buckets{};
  for (std::size_t b = 0; b < kRunTimeBuckets; ++b) {
    buckets[b] = AsInt(row[first + kCounterColumns.size() + 2 + b]);
  }
  out["runs"] = runs;
  if (runs > 0) {
    out["mean_run_ms"] = static_cast<double>(sum) / static_cast<double>(runs);
    out["p50_run_ms"] = EstimateQuantileMs(buckets, 0.50);
    out["p95_run_ms"] = EstimateQuantileMs(buckets, 0.95);
    out["p99_run_ms"] = EstimateQuantileMs(buckets, 0.99);
  } else {
    out["mean_run_ms"] = nullptr;
  }
  // Attempts that ended: succeeded, failed (will retry) or dead from a run.
  const std::int64_t ok = out["succeeded"], failed = out["failed"], dead = out["dead"];
  out["success_rate"] =
      ok + failed + dead > 0
          ? json(static_cast<double>(ok) / static_cast<double>(ok + failed + dead))
          : json(nullptr);
  return out;
}

}  // namespace

StatusOr<json> QueryOverview(SqlDatabase& db, std::int64_t now_ms) {
  const std::string today = UtcDay(now_ms);
  json namespaces = json::object();
  auto ensure = [&namespaces](const std::string& ns) -> json& {
    if (!namespaces.contains(ns)) {
      namespaces[ns] = {{"namespace", ns}, {"types", json::object()}, {"events_lost", 0}};
    }
    return namespaces[ns];
  };
  auto totals = db.Query("SELECT ns FROM type_totals GROUP BY ns");
  if (!totals.ok()) return totals.status();
  for (const auto& row : *totals) ensure(AsText(row[0]));

  auto days = db.Query(
      "SELECT ns, " + SummedRollup() + " FROM daily_stats WHERE day = $1 GROUP BY ns", {today});
  if (!days.ok()) return days.status();
  for (const auto& row : *days) ensure(AsText(row[0]))["today"] = RollupJson(row, 1);

  // The last 5 whole minutes give the rates, the last hour the run times.
  const std::int64_t minute = now_ms / 60000;
  auto recent =
      db.Query("SELECT ns, type, " + SummedRollup() +
                   " FROM minute_stats WHERE minute >= $1 AND minute < $2 GROUP BY ns, type",
               {minute - 5, minute});
  if (!recent.ok()) return recent.status();
  for (const auto& row : *recent) {
    json r = RollupJson(row, 2);
    json& t = ensure(AsText(row[0]))["types"][AsText(row[1])];
    t["per_minute_5m"] = {{"enqueued", r["enqueued"].get<double>() / 5},
                          {"started", r["started"].get<double>() / 5},
                          {"succeeded", r["succeeded"].get<double>() / 5},
                          {"failed", (r["failed"].get<double>() + r["dead"].get<double>()) / 5}};
  }
  auto hour = db.Query("SELECT ns, type, " + SummedRollup() +
                           " FROM minute_stats WHERE minute >= $1 GROUP BY ns, type",
                       {minute - 60});
  if (!hour.ok()) return hour.status();
  for (const auto& row : *hour) {
    json r = RollupJson(row, 2);
    json& t = ensure(AsText(row[0]))["types"][AsText(row[1])];
    t["last_hour"] = r;
  }
  // The newest sample of each type (samples older than 10 minutes are not "now").
  auto samples = db.Query(
      "SELECT q.ns, q.type, q.at_ms, q.ready, q.in_flight, q.delayed, q.retrying, q.dead, "
      "q.consumers, q.live_consumers FROM queue_samples q JOIN (SELECT ns, type, MAX(at_ms) AS m "
      "FROM queue_samples WHERE at_ms >= $1 GROUP BY ns, type) l "
      "ON q.ns = l.ns AND q.type = l.type AND q.at_ms = l.m",
      {now_ms - 600000});
  if (!samples.ok()) return samples.status();
  for (const auto& row : *samples) {
    json& t = ensure(AsText(row[0]))["types"][AsText(row[1])];
    t["queue"] = {{"sampled_at_ms", AsInt(row[2])}, {"ready", AsInt(row[3])},
                  {"in_flight", AsInt(row[4])},     {"delayed", AsInt(row[5])},
                  {"retrying", AsInt(row[6])},      {"dead", AsInt(row[7])},
                  {"consumers", AsInt(row[8])},     {"live_consumers", AsInt(row[9])}};
  }
  auto lost = db.Query("SELECT ns, MAX(lost_total), MAX(detected_ms) FROM event_gaps GROUP BY ns");
  if (!lost.ok()) return lost.status();
  for (const auto& row : *lost) {
    json& n = ensure(AsText(row[0]));
    n["events_lost"] = AsInt(row[1]);
    n["events_lost_last_detected_ms"] = AsInt(row[2]);
  }
  json list = json::array();
  for (auto& [ns, body] : namespaces.items()) {
    if (!body.contains("today")) {
      SqlRow zero(kRollupWidth, SqlValue(std::int64_t{0}));
      body["today"] = RollupJson(zero, 0);
    }
    // Stats are complete only when the collector saw every event (docs/collector.md, "Gaps").
    body["complete"] = body["events_lost"].get<std::int64_t>() == 0;
    list.push_back(std::move(body));
  }
  return json{{"now_ms", now_ms}, {"day", today}, {"namespaces", std::move(list)}};
}

StatusOr<json> QuerySeries(SqlDatabase& db, const std::string& ns, const std::string& type,
                           std::int64_t from_ms, std::int64_t to_ms) {
  // (ns, type, minute) is the primary key: one row per minute, read in key order.
  auto rows = db.Query("SELECT minute, " + RollupColumns() +
                           " FROM minute_stats WHERE ns = $1 AND type = $2 AND minute >= $3 AND "
                           "minute < $4 ORDER BY minute",
                       {ns, type, from_ms / 60000, (to_ms + 59999) / 60000});
  if (!rows.ok()) return rows.status();
  json points = json::array();
  for (const auto& row : *rows) {
    json point = RollupJson(row, 1);
    point["minute_ms"] = AsInt(row[0]) * 60000;
    points.push_back(std::move(point));
  }
  return json{{"namespace", ns},
              {"type", type},
              {"from_ms", from_ms},
              {"to_ms", to_ms},
              {"points", std::move(points)}};
}

StatusOr<json> QueryDaily(SqlDatabase& db, const std::string& ns, std::int64_t now_ms,
                          std::int64_t days) {
  const std::string first_day = UtcDay(now_ms - (days - 1) * 86400000);
  std::string sql = "SELECT ns, day, " + SummedRollup() + " FROM daily_stats WHERE day >= $1";
  std::vector<SqlValue> params = {first_day};
  if (!ns.empty()) {
    sql += " AND ns = $2";
    params.push_back(ns);
  }
  auto rows = db.Query(sql + " GROUP BY ns, day ORDER BY day DESC, ns", params);
  if (!rows.ok()) return rows.status();
  json list = json::array();
  for (const auto& row : *rows) {
    json day = RollupJson(row, 2);
    day["namespace"] = AsText(row[0]);
    day["day"] = AsText(row[1]);
    list.push_back(std::move(day));
  }
  return json{{"from_day", first_day}, {"days", std::move(list)}};
}

StatusOr<json> QueryTimeline(SqlDatabase& db, const std::string& task_id) {
  auto events = db.Query(
      "SELECT ns, entry_ms, entry_seq, idx, type, from_state, to_state, attempt, worker, error, "
      "kind, stack FROM events WHERE task_id = $1 ORDER BY entry_ms, entry_seq, idx",
      {task_id});
  if (!events.ok()) return events.status();
  if (events->empty()) {
    return Status::NotFound("task " + task_id +
                            ": no events stored (unknown id, or older than "
                            "the raw-event retention)");
  }
  json list = json::array();
  std::string ns, type;
  for (const auto& row : *events) {
    ns = AsText(row[0]);
    type = AsText(row[4]);
    const std::string worker = AsText(row[8]);
    json e = {{"at_ms", AsInt(row[1])},
              {"entry_id", std::to_string(AsInt(row[1])) + "-" + std::to_string(AsInt(row[2]))},
              {"from", AsText(row[5])},
              {"to", AsText(row[6])},
              {"attempt", AsInt(row[7])},
              {"worker", worker}};
    if (!worker.empty() && worker != "reclaim") {
      const WorkerIdentity who = ParseWorkerName(worker);
      e["language"] = who.language;
      if (!who.host.empty()) e["host"] = who.host;
    }
    if (!AsText(row[9]).empty()) e["error"] = AsText(row[9]);
    if (!AsText(row[10]).empty()) e["kind"] = AsText(row[10]);
    if (!AsText(row[11]).empty()) e["stack"] = AsText(row[11]);
    list.push_back(std::move(e));
  }
  auto runs = db.Query(
      "SELECT attempt, worker, started_ms, ended_ms, outcome FROM runs WHERE ns = $1 AND "
      "task_id = $2 ORDER BY attempt",
      {ns, task_id});
  if (!runs.ok()) return runs.status();
  json attempts = json::array();
  for (const auto& row : *runs) {
    json a = {{"attempt", AsInt(row[0])}, {"worker", AsText(row[1])}};
    if (!AsText(row[1]).empty()) a["language"] = ParseWorkerName(AsText(row[1])).language;
    a["started_ms"] = IsNull(row[2]) ? json(nullptr) : json(AsInt(row[2]));
    a["ended_ms"] = IsNull(row[3]) ? json(nullptr) : json(AsInt(row[3]));
    a["outcome"] = IsNull(row[4]) ? json(nullptr) : json(AsText(row[4]));
    if (!IsNull(row[2]) && !IsNull(row[3])) a["run_ms"] = AsInt(row[3]) - AsInt(row[2]);
    attempts.push_back(std::move(a));
  }
  const std::string first_from = list.front()["from"];
  return json{{"task_id", task_id},
              {"namespace", ns},
              {"type", type},
              {"state", list.back()["to"]},
              {"complete", first_from == "new"},
              {"events", std::move(list)},
              {"attempts", std::move(attempts)}};
}

StatusOr<json> QueryDead(SqlDatabase& db, const DeadSearch& search) {
  std::string sql =
      "SELECT s.ns, s.task_id, s.type, s.attempt, s.updated_ms, s.error, s.worker, "
      "(SELECT e.stack FROM events e WHERE e.task_id = s.task_id AND e.ns = s.ns AND "
      "e.to_state = 'dead' ORDER BY e.entry_ms DESC LIMIT 1), "
      "(SELECT e.kind FROM events e WHERE e.task_id = s.task_id AND e.ns = s.ns AND "
      "e.to_state = 'dead' ORDER BY e.entry_ms DESC LIMIT 1) "
      "FROM task_state s WHERE s.state = 'dead'";
  std::vector<SqlValue> params;
  auto param = [&params](SqlValue v) {
    params.push_back(std::move(v));
    return "$" + std::to_string(params.size());
  };
  if (search.ns) sql += " AND s.ns = " + param(*search.ns);
  if (search.type) sql += " AND s.type = " + param(*search.type);
  if (search.from_ms) sql += " AND s.updated_ms >= " + param(*search.from_ms);
  if (search.to_ms) sql += " AND s.updated_ms < " + param(*search.to_ms);
  if (search.text) {
    // LIKE wildcards in the text are matched literally.
    std::string pattern = "%";
    for (char c : *search.text) {
      if (c == '%' || c == '_' || c == '\\') pattern += '\\';
      pattern += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    pattern += "%";
    sql += " AND LOWER(s.error) LIKE " + param(pattern) + " ESCAPE '\\'";
  }
  sql += " ORDER BY s.updated_ms DESC, s.task_id LIMIT " + param(search.limit) + " OFFSET " +
         param(search.offset);
  auto rows = db.Query(sql, params);
  if (!rows.ok()) return rows.status();
  json tasks = json::array();
  for (const auto& row : *rows) {
    json t = {{"namespace", AsText(row[0])}, {"task_id", AsText(row[1])},
              {"type", AsText(row[2])},      {"attempt", AsInt(row[3])},
              {"died_at_ms", AsInt(row[4])}, {"error", AsText(row[5])},
              {"worker", AsText(row[6])}};
    if (!AsText(row[7]).empty()) t["stack"] = AsText(row[7]);
    if (!AsText(row[8]).empty()) t["kind"] = AsText(row[8]);
    tasks.push_back(std::move(t));
  }
  return json{{"tasks", std::move(tasks)}, {"limit", search.limit}, {"offset", search.offset}};
}

StatusOr<json> QueryWorkers(SqlDatabase& db, std::int64_t now_ms, std::int64_t window_ms) {
  auto rows = db.Query(
      "SELECT name, ns, type, language, host, service, first_seen_ms, last_event_ms, "
      "last_live_ms, pending, started, succeeded, failed FROM workers "
      "WHERE last_event_ms >= $1 OR last_live_ms >= $1 ORDER BY name, ns, type",
      {now_ms - window_ms});
  if (!rows.ok()) return rows.status();
  // One entry per worker process, with the (namespace, type) pairs it serves.
  json workers = json::array();
  std::map<std::string, std::int64_t> by_language;
  std::string previous;
  for (const auto& row : *rows) {
    const std::string name = AsText(row[0]);
    if (name != previous) {
      workers.push_back({{"name", name},
                         {"language", AsText(row[3])},
                         {"host", AsText(row[4])},
                         {"service", AsText(row[5])},
                         {"first_seen_ms", AsInt(row[6])},
                         {"last_seen_ms", 0},
                         {"pending", 0},
                         {"started", 0},
                         {"succeeded", 0},
                         {"failed", 0},
                         {"queues", json::array()}});
      ++by_language[AsText(row[3])];
      previous = name;
    }
    json& w = workers.back();
    const std::int64_t seen = std::max(AsInt(row[7]), AsInt(row[8]));
    w["last_seen_ms"] = std::max(w["last_seen_ms"].get<std::int64_t>(), seen);
    w["first_seen_ms"] = std::min(w["first_seen_ms"].get<std::int64_t>(), AsInt(row[6]));
    for (auto [column, key] :
         {std::pair{9, "pending"}, {10, "started"}, {11, "succeeded"}, {12, "failed"}}) {
      w[key] = w[key].get<std::int64_t>() + AsInt(row[column]);
    }
    w["queues"].push_back({{"namespace", AsText(row[1])}, {"type", AsText(row[2])}});
  }
  return json{
      {"window_ms", window_ms}, {"by_language", by_language}, {"workers", std::move(workers)}};
}

}  // namespace baton::collector
