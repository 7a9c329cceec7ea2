#include "queue_sampler.h"

namespace baton::collector {

StatusOr<QueueSampleSet> SampleQueues(Inspector& inspector, const std::set<std::string>& namespaces,
                                      std::int64_t at_ms, std::int64_t now_ms) {
  QueueSampleSet set;
  for (const auto& ns : namespaces) {
    auto queues = inspector.ListQueues(ns);
    if (!queues.ok()) {
      // A namespace name that breaks the pattern (found by SCAN) cannot be inspected: skip it.
      if (queues.status().code() == StatusCode::kInvalidArgument) continue;
      return queues.status();
    }
    for (const QueueInfo& q : *queues) {
      set.queues.push_back({q.ns, q.type, at_ms, q.ready, q.in_flight, q.delayed, q.retrying,
                            q.dead, q.consumers, q.live_consumers});
      for (const GroupInfo& g : q.groups) {
        for (const ConsumerInfo& c : g.consumers) {
          set.consumers.push_back({c.name, q.ns, q.type, c.pending, now_ms - c.idle_ms});
        }
      }
    }
  }
  return set;
}

}  // namespace baton::collector
