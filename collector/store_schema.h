#pragma once
// The store's tables (the same on every engine) and their versioned migrations. docs/collector.md
// describes each table.
#include <array>
#include <string>
#include <string_view>

#include "baton/status.h"
#include "sql_database.h"

namespace baton::collector {

// The outcome counters every rollup table has (minute_stats, type_totals, daily_stats), in order.
inline constexpr std::array<std::string_view, 10> kCounterColumns = {
    "enqueued",   // new -> queued / scheduled
    "started",    // queued -> active (an attempt began)
    "succeeded",  // -> done (acked)
    "failed",     // active -> retry (an attempt failed, another one will run)
    "dead",       // -> dead (failed for good, or malformed)
    "reclaimed",  // an attempt whose lease ran out (worker "reclaim"), also counted as failed/dead
    "cancelled",  // -> cancelled
    "replayed",   // dead -> queued
    "deleted",    // -> deleted
    "dropped",    // dead -> dropped (dead-letter caps)
};

// The newest schema version this build writes.
int CurrentSchemaVersion();

// Brings the store to CurrentSchemaVersion(): creates baton_schema when missing, then applies
// each missing migration in its own transaction. kConflict when the store was written by a newer
// collector (a version above CurrentSchemaVersion()).
Status MigrateStore(SqlDatabase& db);

}  // namespace baton::collector
