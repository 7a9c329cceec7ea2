#pragma once
// The counts of one (namespace, task type): ListQueues, GetQueue and the queue doctor.
#include <cstdint>
#include <string>

#include "baton/inspector.h"
#include "baton/status.h"
#include "inspect/event_scan.h"
#include "inspect/inspector_core.h"
#include "inspect/stream_state.h"

namespace baton::internal {

struct ScheduledSplit {
  std::int64_t delayed = 0;
  std::int64_t retrying = 0;
  bool exact = true;
};

// Splits scheduled:TYPE into first runs and retries by reading each member's record (ZRANGE +
// HMGET baton:v2:{ns}:tasks, 1000 members per round trip). Past `scan_limit` members the split of
// the scanned (earliest due) part is extrapolated to the whole set.
StatusOr<ScheduledSplit> SplitScheduled(InspectorCore& core, const std::string& ns,
                                        const std::string& type, std::size_t scan_limit);

// Everything QueueInfo holds for (ns, type). `rates` comes from MeasureRates (one walk of the
// events stream serves every type of the namespace). `stream_out`, when given, receives the stream
// snapshot the counts came from.
StatusOr<QueueInfo> ReadQueue(InspectorCore& core, const std::string& ns, const std::string& type,
                              std::int64_t now_ms, const RateSample& rates,
                              StreamState* stream_out = nullptr);

}  // namespace baton::internal
