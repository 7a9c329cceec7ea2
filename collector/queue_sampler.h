#pragma once
// Reads every queue's counts from Redis at a fixed, low rate (the collector's --sample-interval),
// never per API request: each (namespace, type) costs the handful of commands of
// Inspector::ListQueues, the same reads as `baton queues`.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "baton/inspector.h"
#include "baton/status.h"
#include "store_writer.h"

namespace baton::collector {

struct QueueSampleSet {
  std::vector<QueueSample> queues;
  std::vector<ConsumerSample> consumers;
};

// One sample of every type of `namespaces`, stamped `at_ms` (the sampling tick, so that two
// collectors sampling the same tick write one row).
StatusOr<QueueSampleSet> SampleQueues(Inspector& inspector, const std::set<std::string>& namespaces,
                                      std::int64_t at_ms, std::int64_t now_ms);

}  // namespace baton::collector
