#pragma once
// What the HTTP API reads from the store (never from the queue Redis): each function runs a few
// indexed queries and returns the JSON body of one endpoint (docs/collector-openapi.yaml).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "baton/status.h"
#include "sql_database.h"

namespace baton::collector {

// GET /api/overview: per namespace, today's totals (UTC day) and each type's latest sample,
// rates over the last 5 minutes and run times over the last hour.
StatusOr<nlohmann::json> QueryOverview(SqlDatabase& db, std::int64_t now_ms);

// GET /api/series: one row per minute of (ns, type) in [from_ms, to_ms): counts, mean, p50, p95,
// p99 run time.
StatusOr<nlohmann::json> QuerySeries(SqlDatabase& db, const std::string& ns,
                                     const std::string& type, std::int64_t from_ms,
                                     std::int64_t to_ms);

// GET /api/daily: the daily totals of `ns` (every namespace when empty), the newest `days` UTC
// days, newest first.
StatusOr<nlohmann::json> QueryDaily(SqlDatabase& db, const std::string& ns, std::int64_t now_ms,
                                    std::int64_t days);

// GET /api/tasks/{id}: every stored event of the task (oldest first) and its attempts. kNotFound
// when the store has none.
StatusOr<nlohmann::json> QueryTimeline(SqlDatabase& db, const std::string& task_id);

struct DeadSearch {
  std::optional<std::string> ns, type, text;   // text: part of the error, case-insensitive
  std::optional<std::int64_t> from_ms, to_ms;  // when the task died
  std::int64_t limit = 100;                    // 1..1000
  std::int64_t offset = 0;
};
// GET /api/dead: tasks whose latest event put them in the dead-letter queue, newest first.
StatusOr<nlohmann::json> QueryDead(SqlDatabase& db, const DeadSearch& search);

// GET /api/workers: workers seen in events or in the sampled groups within `window_ms`, with
// their language and host, and the live count per language.
StatusOr<nlohmann::json> QueryWorkers(SqlDatabase& db, std::int64_t now_ms, std::int64_t window_ms);

}  // namespace baton::collector
