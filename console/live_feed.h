#pragma once
// The live flow (GET /api/live): one thread reads every queue from Redis (Inspector::ListQueues)
// and the recent workers from the store, every interval, while someone watches; all the SSE
// streams share that one snapshot, so N open pages cost Redis what one does.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "baton/inspector.h"

namespace baton::console {

class LiveFeed {
 public:
  using WorkersQuery = std::function<StatusOr<nlohmann::json>(std::int64_t now_ms)>;

  LiveFeed(InspectorOptions options, WorkersQuery workers, std::chrono::milliseconds interval);
  ~LiveFeed();
  LiveFeed(const LiveFeed&) = delete;
  LiveFeed& operator=(const LiveFeed&) = delete;

  void Start();
  void Stop();

  struct Snapshot {
    std::uint64_t seq = 0;  // 0: none yet
    std::shared_ptr<const std::string> json;
    bool stopped = false;  // the console is shutting down: end the stream
  };
  // The first snapshot with seq > `after`, waiting up to `timeout` (then the current one, which
  // may be the same seq). A snapshot older than two intervals (the feed paused for lack of
  // viewers) is not given out while a fresh one is due. Calling it keeps the feed refreshing.
  Snapshot WaitNewer(std::uint64_t after, std::chrono::milliseconds timeout);

 private:
  void Loop();
  std::string Build();

  InspectorOptions options_;
  WorkersQuery workers_;
  std::chrono::milliseconds interval_;
  std::unique_ptr<Inspector> inspector_;  // used on the feed's thread only
  std::mutex mu_;
  std::condition_variable cv_;
  Snapshot current_;
  std::chrono::steady_clock::time_point current_built_;
  std::chrono::steady_clock::time_point last_demand_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace baton::console
