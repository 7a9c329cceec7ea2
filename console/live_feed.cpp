#include "live_feed.h"

#include <spdlog/spdlog.h>

namespace baton::console {
namespace {

// The feed pauses when nobody asked for a snapshot this long.
constexpr auto kIdleAfter = std::chrono::seconds(10);

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

LiveFeed::LiveFeed(InspectorOptions options, WorkersQuery workers,
                   std::chrono::milliseconds interval)
    : options_(std::move(options)), workers_(std::move(workers)), interval_(interval) {}

LiveFeed::~LiveFeed() { Stop(); }

void LiveFeed::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void LiveFeed::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

LiveFeed::Snapshot LiveFeed::WaitNewer(std::uint64_t after, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  last_demand_ = now;
  cv_.notify_all();  // wakes a paused feed
  if (current_.seq > after && now - current_built_ > 2 * interval_) after = current_.seq;
  cv_.wait_for(lock, timeout, [&] { return stop_ || current_.seq > after; });
  Snapshot out = current_;
  out.stopped = stop_;
  return out;
}

std::string LiveFeed::Build() {
  const std::int64_t now_ms = NowMs();
  nlohmann::json out = {{"now_ms", now_ms}, {"namespaces", nlohmann::json::array()}};
  std::string error;
  if (!inspector_) {
    auto connected = Inspector::Connect(options_);
    if (connected.ok()) {
      inspector_ = std::move(connected).value();
    } else {
      error = "redis: " + connected.status().message();
    }
  }
  if (inspector_) {
    auto namespaces = inspector_->ListNamespaces();
    if (!namespaces.ok()) {
      error = "redis: " + namespaces.status().message();
      if (namespaces.status().code() == StatusCode::kUnavailable) inspector_.reset();
    } else {
      for (const auto& ns : *namespaces) {
        auto queues = inspector_->ListQueues(ns);
        if (!queues.ok()) {
          error = "redis: " + queues.status().message();
          if (queues.status().code() == StatusCode::kUnavailable) inspector_.reset();
          break;
        }
        nlohmann::json list = nlohmann::json::array();
        for (const auto& q : *queues) list.push_back(q.ToJson());
        out["namespaces"].push_back({{"ns", ns}, {"queues", list}});
      }
    }
  }
  auto workers = workers_(now_ms);
  if (workers.ok()) {
    out["workers"] = std::move(workers).value();
  } else {
    out["workers"] = nullptr;
    error += (error.empty() ? "" : "; ") + std::string("store: ") + workers.status().message();
  }
  if (!error.empty()) out["error"] = error;
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void LiveFeed::Loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] {
        return stop_ || std::chrono::steady_clock::now() - last_demand_ < kIdleAfter;
      });
      if (stop_) return;
    }
    const auto started = std::chrono::steady_clock::now();
    std::string json = Build();
    {
      std::lock_guard<std::mutex> lock(mu_);
      current_.seq += 1;
      current_.json = std::make_shared<const std::string>(std::move(json));
      current_built_ = std::chrono::steady_clock::now();
    }
    cv_.notify_all();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_until(lock, started + interval_, [this] { return stop_; });
    if (stop_) return;
  }
}

}  // namespace baton::console
