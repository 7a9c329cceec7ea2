#include "retention.h"

#include <algorithm>
#include <string>

namespace baton::collector {
namespace {

constexpr std::int64_t kDayMs = 86400000;
constexpr std::int64_t kHourMs = 3600000;

// Deletes rows of `table` whose `column` is below `cutoff`, a slice of at least an hour of data per
// statement, from the oldest. `scale` converts ms to the column's unit. Returns the rows deleted.
StatusOr<std::int64_t> DeleteBefore(SqlDatabase& db, const std::string& table,
                                    const std::string& column, std::int64_t cutoff_ms,
                                    std::int64_t scale) {
  auto oldest = db.Query("SELECT MIN(" + column + ") FROM " + table);
  if (!oldest.ok()) return oldest.status();
  if (oldest->empty() || IsNull((*oldest)[0][0])) return std::int64_t{0};
  const std::int64_t start = AsInt((*oldest)[0][0]) * scale;
  // At most about 100 slices, however old the oldest row is.
  const std::int64_t step = std::max(kHourMs, (cutoff_ms - start) / 100);
  std::int64_t deleted = 0;
  for (std::int64_t upto = start + step;; upto += step) {
    const std::int64_t bound = std::min(upto, cutoff_ms);
    auto rows = db.Query("DELETE FROM " + table + " WHERE " + column + " < $1 RETURNING 1",
                         {bound / scale});
    if (!rows.ok()) return rows.status();
    deleted += static_cast<std::int64_t>(rows->size());
    if (bound >= cutoff_ms) break;
  }
  return deleted;
}

}  // namespace

StatusOr<RetentionResult> ApplyRetention(SqlDatabase& db, const RetentionPolicy& policy,
                                         std::int64_t now_ms) {
  RetentionResult result;
  const std::int64_t events_cutoff = now_ms - policy.events_days * kDayMs;
  const std::int64_t minutes_cutoff = now_ms - policy.minutes_days * kDayMs;
  auto events = DeleteBefore(db, "events", "entry_ms", events_cutoff, 1);
  if (!events.ok()) return events.status();
  result.events_deleted = *events;
  for (const char* sql :
       {"DELETE FROM runs WHERE COALESCE(ended_ms, started_ms) < $1",
        // A dead task stays findable in the dead-letter search until it leaves the queue.
        "DELETE FROM task_state WHERE updated_ms < $1 AND state <> 'dead'",
        "DELETE FROM workers WHERE last_event_ms < $1 AND last_live_ms < $1",
        "DELETE FROM rejected_events WHERE seen_ms < $1"}) {
    if (auto r = db.Query(sql, {events_cutoff}); !r.ok()) return r.status();
  }
  auto minutes = DeleteBefore(db, "minute_stats", "minute", minutes_cutoff, 60000);
  if (!minutes.ok()) return minutes.status();
  result.minute_rows_deleted = *minutes;
  if (auto r = db.Query("DELETE FROM queue_samples WHERE at_ms < $1", {minutes_cutoff}); !r.ok()) {
    return r.status();
  }
  return result;
}

}  // namespace baton::collector
