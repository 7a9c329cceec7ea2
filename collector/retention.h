#pragma once
// Deletes what the store keeps no longer: raw events and runs after `events_days`, minute rollups
// and queue samples after `minutes_days`; daily totals and running totals are kept. Deletes in
// slices of one hour, each its own transaction, so that ingest is never held up long.
#include <cstdint>

#include "baton/status.h"
#include "sql_database.h"

namespace baton::collector {

struct RetentionPolicy {
  std::int64_t events_days = 7;
  std::int64_t minutes_days = 30;
};

struct RetentionResult {
  std::int64_t events_deleted = 0;
  std::int64_t minute_rows_deleted = 0;
};

StatusOr<RetentionResult> ApplyRetention(SqlDatabase& db, const RetentionPolicy& policy,
                                         std::int64_t now_ms);

}  // namespace baton::collector
