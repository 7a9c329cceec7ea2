#include "worker/lease_keeper.h"

#include <algorithm>
#include <cstdio>

#include "scheduler/backoff.h"

namespace baton::internal {

namespace {
constexpr std::chrono::milliseconds kWatchdogTick{25};
}  // namespace

LeaseKeeper::LeaseKeeper(RedisEndpoint endpoint, std::chrono::milliseconds lease,
                         std::vector<std::shared_ptr<TypeRunner>> runners)
    : endpoint_(std::move(endpoint)), lease_(lease), runners_(std::move(runners)) {}

LeaseKeeper::~LeaseKeeper() { Stop(); }

Status LeaseKeeper::Start() {
  StatusOr<std::unique_ptr<RedisConnection>> conn = RedisConnection::Open(endpoint_);
  if (!conn.ok()) return conn.status();
  conn_ = std::move(*conn);
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  watchdog_ = std::thread([this] { WatchdogLoop(); });
  return Status::Ok();
}

void LeaseKeeper::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (heartbeat_.joinable()) heartbeat_.join();
  if (watchdog_.joinable()) watchdog_.join();
}

bool LeaseKeeper::WaitFor(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, d, [this] { return stopping_; });
}

Status LeaseKeeper::HeartbeatOnce() {
  if (conn_->broken()) {
    Status st = conn_->Reconnect();
    if (!st.ok()) return st;
  }
  std::vector<std::vector<std::string>> sent(runners_.size());
  std::vector<std::size_t> sent_for;  // runner index of each appended command
  for (std::size_t i = 0; i < runners_.size(); ++i) {
    runners_[i]->HeartbeatSids(&sent[i]);
    if (sent[i].empty()) continue;
    const RunnerSettings& s = runners_[i]->settings();
    std::vector<std::string> argv = {"FCALL", "baton_extend", "1", runners_[i]->stream_key(),
                                     s.group, s.consumer};
    argv.insert(argv.end(), sent[i].begin(), sent[i].end());
    conn_->Append(argv);
    sent_for.push_back(i);
  }
  if (sent_for.empty()) return Status::Ok();
  StatusOr<std::vector<Reply>> replies = conn_->Flush();
  if (!replies.ok()) return replies.status();
  for (std::size_t k = 0; k < sent_for.size() && k < replies->size(); ++k) {
    std::size_t i = sent_for[k];
    runners_[i]->OnExtendReply(sent[i], (*replies)[k]);
  }
  return Status::Ok();
}

void LeaseKeeper::HeartbeatLoop() {
  const std::chrono::milliseconds period = std::max(lease_ / 3, std::chrono::milliseconds(1));
  // After a failure, retry sooner than the period (but never later): one missed beat must not
  // cost the lease.
  Backoff backoff(std::chrono::milliseconds(100), period);
  std::chrono::milliseconds wait = period;
  while (WaitFor(wait)) {
    Status st = HeartbeatOnce();
    if (st.ok()) {
      backoff.Reset();
      wait = period;
    } else {
      wait = std::min(backoff.Next(), period);
      std::fprintf(stderr, "baton worker heartbeat: %s\n", st.ToString().c_str());
    }
  }
}

void LeaseKeeper::WatchdogLoop() {
  while (WaitFor(kWatchdogTick)) {
    auto now = std::chrono::steady_clock::now();
    for (const std::shared_ptr<TypeRunner>& r : runners_) r->CheckDeadlines(now);
  }
}

}  // namespace baton::internal
