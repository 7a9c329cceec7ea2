#include "metrics.h"

#include <map>
#include <sstream>
#include <vector>

#include "run_time_histogram.h"
#include "store_schema.h"

namespace baton::collector {
namespace {

void Header(std::ostringstream& out, const char* name, const char* type, const char* help) {
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

std::string Labels(std::initializer_list<std::pair<const char*, std::string>> labels) {
  std::string text = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    text += (first ? "" : ",") + std::string(k) + "=\"" + EscapeLabel(v) + "\"";
    first = false;
  }
  return text + "}";
}

}  // namespace

std::string EscapeLabel(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

StatusOr<std::string> RenderMetrics(SqlDatabase& db, const CollectorStats& stats,
                                    std::int64_t now_ms) {
  std::ostringstream out;
  std::string columns;
  for (auto c : kCounterColumns) columns += std::string(c) + ", ";
  columns += "run_count, run_sum_ms";
  for (std::size_t b = 0; b < kRunTimeBuckets; ++b) columns += ", " + BucketColumn(b);
  auto totals = db.Query("SELECT ns, type, " + columns + " FROM type_totals ORDER BY ns, type");
  if (!totals.ok()) return totals.status();

  Header(out, "baton_tasks_total", "counter",
         "Task transitions by outcome (enqueued, started, succeeded, failed, dead, reclaimed, "
         "cancelled, replayed, deleted, dropped), from the collected events.");
  for (const auto& row : *totals) {
    for (std::size_t i = 0; i < kCounterColumns.size(); ++i) {
      out << "baton_tasks_total"
          << Labels({{"namespace", AsText(row[0])},
                     {"type", AsText(row[1])},
                     {"outcome", std::string(kCounterColumns[i])}})
          << ' ' << AsInt(row[2 + i]) << '\n';
    }
  }
  Header(out, "baton_task_run_seconds", "histogram",
         "Run time of attempts that ended (succeeded or failed; leases taken back excluded).");
  const std::size_t run_count = 2 + kCounterColumns.size();
  for (const auto& row : *totals) {
    const std::string ns = AsText(row[0]), type = AsText(row[1]);
    std::int64_t cumulative = 0;
    for (std::size_t b = 0; b < kRunTimeBuckets; ++b) {
      cumulative += AsInt(row[run_count + 2 + b]);
      const std::string le = b < kRunTimeBoundsMs.size()
                                 ? [](std::int64_t ms) {
                                     std::ostringstream s;
                                     s << static_cast<double>(ms) / 1000.0;
                                     return s.str();
                                   }(kRunTimeBoundsMs[b])
                                 : "+Inf";
      out << "baton_task_run_seconds_bucket"
          << Labels({{"namespace", ns}, {"type", type}, {"le", le}}) << ' ' << cumulative << '\n';
    }
    out << "baton_task_run_seconds_sum" << Labels({{"namespace", ns}, {"type", type}}) << ' '
        << static_cast<double>(AsInt(row[run_count + 1])) / 1000.0 << '\n';
    out << "baton_task_run_seconds_count" << Labels({{"namespace", ns}, {"type", type}}) << ' '
        << AsInt(row[run_count]) << '\n';
  }

  auto samples = db.Query(
      "SELECT q.ns, q.type, q.ready, q.in_flight, q.delayed, q.retrying, q.dead, "
      "q.live_consumers FROM queue_samples q JOIN (SELECT ns, type, MAX(at_ms) AS m "
      "FROM queue_samples WHERE at_ms >= $1 GROUP BY ns, type) l "
      "ON q.ns = l.ns AND q.type = l.type AND q.at_ms = l.m ORDER BY q.ns, q.type",
      {now_ms - 600000});
  if (!samples.ok()) return samples.status();
  const std::vector<std::pair<const char*, const char*>> gauges = {
      {"baton_queue_ready", "Tasks waiting for a worker (newest sample)."},
      {"baton_queue_in_flight", "Tasks delivered to a worker and not acked (newest sample)."},
      {"baton_queue_delayed", "Tasks scheduled for a first run later (newest sample)."},
      {"baton_queue_retrying", "Tasks waiting for a retry (newest sample)."},
      {"baton_queue_dead", "Tasks in the dead-letter queue (newest sample)."},
      {"baton_queue_live_consumers", "Consumers that got work lately (newest sample)."}};
  for (std::size_t g = 0; g < gauges.size(); ++g) {
    Header(out, gauges[g].first, "gauge", gauges[g].second);
    for (const auto& row : *samples) {
      out << gauges[g].first << Labels({{"namespace", AsText(row[0])}, {"type", AsText(row[1])}})
          << ' ' << AsInt(row[2 + g]) << '\n';
    }
  }

  auto live = db.Query(
      "SELECT language, COUNT(DISTINCT name) FROM workers WHERE last_event_ms >= $1 OR "
      "last_live_ms >= $1 GROUP BY language ORDER BY language",
      {now_ms - 60000});
  if (!live.ok()) return live.status();
  Header(out, "baton_workers_live", "gauge",
         "Worker processes seen in the last minute (events or live consumers), by language.");
  for (const auto& row : *live) {
    out << "baton_workers_live" << Labels({{"language", AsText(row[0])}}) << ' ' << AsInt(row[1])
        << '\n';
  }

  auto lost = db.Query("SELECT ns, MAX(lost_total) FROM event_gaps GROUP BY ns ORDER BY ns");
  if (!lost.ok()) return lost.status();
  Header(out, "baton_events_lost_total", "counter",
         "Events trimmed from a namespace's events stream before any collector read them.");
  for (const auto& row : *lost) {
    out << "baton_events_lost_total" << Labels({{"namespace", AsText(row[0])}}) << ' '
        << AsInt(row[1]) << '\n';
  }

  Header(out, "baton_collector_lag_entries", "gauge",
         "Events-stream entries the collectors' group has yet to read, per namespace.");
  for (const auto& [ns, lag] : stats.Lag()) {
    out << "baton_collector_lag_entries" << Labels({{"namespace", ns}}) << ' ' << lag.behind
        << '\n';
  }
  const std::vector<std::tuple<const char*, const char*, std::int64_t>> own = {
      {"baton_collector_events_stored_total", "Event rows this process stored.",
       stats.events_stored.load()},
      {"baton_collector_events_duplicate_total",
       "Event rows this process found already stored (replayed after a crash).",
       stats.events_duplicate.load()},
      {"baton_collector_entries_rejected_total",
       "Events-stream entries that were not well-formed events (kept in rejected_events).",
       stats.entries_rejected.load()},
      {"baton_collector_store_errors_total", "Store writes that failed and were retried.",
       stats.store_errors.load()},
      {"baton_collector_redis_errors_total", "Redis reads that failed and were retried.",
       stats.redis_errors.load()}};
  for (const auto& [name, help, value] : own) {
    Header(out, name, "counter", help);
    out << name << ' ' << value << '\n';
  }
  return out.str();
}

}  // namespace baton::collector
