#pragma once
// GET /metrics: the Prometheus text exposition format (version 0.0.4). Task counters and run-time
// histograms come from the store's running totals (type_totals), so every collector sharing a
// store reports the same numbers and they survive restarts; gauges come from the newest queue
// samples; the collector's own counters from this process.
#include <cstdint>
#include <string>

#include "baton/status.h"
#include "collector_stats.h"
#include "sql_database.h"

namespace baton::collector {

StatusOr<std::string> RenderMetrics(SqlDatabase& db, const CollectorStats& stats,
                                    std::int64_t now_ms);

// A label value escaped for the exposition format (backslash, double quote, newline).
std::string EscapeLabel(const std::string& value);

}  // namespace baton::collector
