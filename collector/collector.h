#pragma once
// baton-collector's process: the ingest loop (events -> store, then XACK), the queue sampler, the
// retention sweep and the HTTP API, each on its own thread with its own connections.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "baton/status.h"
#include "collector_config.h"
#include "collector_stats.h"

namespace baton::collector {

class Collector {
 public:
  explicit Collector(CollectorConfig config);
  ~Collector();

  // Opens and migrates the store, starts the HTTP server and the sampler, then ingests until
  // RequestStop(). Errors: the store cannot be opened or migrated, --listen cannot be bound.
  // Redis and store outages while running are retried (logged), never fatal.
  Status Run();
  void RequestStop();

  // The HTTP port once Run() has bound it (0 before).
  int http_port() const { return http_port_.load(); }
  const CollectorStats& stats() const { return stats_; }

 private:
  void SampleLoop();
  bool WaitFor(std::chrono::milliseconds d);  // false when stopping

  CollectorConfig config_;
  CollectorStats stats_;
  std::atomic<bool> stop_{false};
  std::atomic<int> http_port_{0};
  std::mutex mu_;
  std::condition_variable wake_;
  std::mutex namespaces_mu_;
  std::set<std::string> namespaces_;  // followed by the ingest loop, sampled by the sampler
};

}  // namespace baton::collector
