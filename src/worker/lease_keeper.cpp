#include "worker/lease_keeper.h"

#include <algorithm>

#include "broker/functions.h"
#include "core/backoff.h"

namespace baton::internal {

LeaseKeeper::LeaseKeeper(RedisEndpoint endpoint, std::vector<std::shared_ptr<TypeRunner>> runners,
                         std::shared_ptr<Alarm> deadline_alarm, LogFn log)
    : endpoint_(std::move(endpoint)),
      runners_(std::move(runners)),
      log_(std::move(log)),
      deadline_alarm_(std::move(deadline_alarm)) {}

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
  heartbeat_alarm_.Stop();
  deadline_alarm_->Stop();
  if (heartbeat_.joinable()) heartbeat_.join();
  if (watchdog_.joinable()) watchdog_.join();
}

Status LeaseKeeper::Beat(const std::vector<bool>& due) {
  if (conn_->broken()) {
    Status st = conn_->Reconnect();
    if (!st.ok()) return st;
  }
  std::vector<std::vector<fn::HeldTask>> sent(runners_.size());
  std::vector<std::size_t> sent_for;  // runner index of each appended command
  for (std::size_t i = 0; i < runners_.size(); ++i) {
    if (!due[i]) continue;
    runners_[i]->HeartbeatTasks(&sent[i]);
    if (sent[i].empty()) continue;
    const RunnerSettings& s = runners_[i]->settings();
    conn_->Append(fn::Extend(s.ns, s.type, s.group, s.consumer, s.lease_ms, sent[i]));
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
  // Each type beats every lease/3 of its own lease; the thread sleeps until the next beat due.
  std::vector<std::chrono::milliseconds> period(runners_.size());
  std::vector<Clock::time_point> next(runners_.size());
  std::chrono::milliseconds shortest = std::chrono::milliseconds::max();
  const Clock::time_point start = Clock::now();
  for (std::size_t i = 0; i < runners_.size(); ++i) {
    period[i] = std::max(std::chrono::milliseconds(runners_[i]->settings().lease_ms / 3),
                         std::chrono::milliseconds(1));
    next[i] = start + period[i];
    shortest = std::min(shortest, period[i]);
  }
  // After a failure, retry sooner than the period (but never later): one missed beat must not
  // cost the lease.
  Backoff backoff(std::chrono::milliseconds(100), shortest);
  std::vector<bool> due(runners_.size());
  Clock::time_point wake = start + shortest;
  while (heartbeat_alarm_.SleepUntil(wake)) {
    const Clock::time_point now = Clock::now();
    bool any = false;
    for (std::size_t i = 0; i < runners_.size(); ++i) {
      due[i] = next[i] <= now;
      any = any || due[i];
    }
    if (!any) continue;  // woken early (spuriously): `wake` still holds
    Status st = Beat(due);
    if (st.ok()) {
      outage_.Succeeded(log_);
      backoff.Reset();
      for (std::size_t i = 0; i < runners_.size(); ++i) {
        if (due[i]) next[i] = now + period[i];
      }
    } else {
      outage_.Failed(log_, st, backoff.Peek());
      const Clock::time_point retry = now + backoff.Next();
      for (std::size_t i = 0; i < runners_.size(); ++i) {
        if (due[i]) next[i] = std::min(retry, now + period[i]);
      }
    }
    wake = *std::min_element(next.begin(), next.end());
  }
}

void LeaseKeeper::WatchdogLoop() {
  while (true) {
    Clock::time_point next = Clock::time_point::max();
    for (const std::shared_ptr<TypeRunner>& r : runners_) next = std::min(next, r->NextDeadline());
    const bool running = next == Clock::time_point::max() ? deadline_alarm_->Sleep()
                                                          : deadline_alarm_->SleepUntil(next);
    if (!running) return;
    const Clock::time_point now = Clock::now();
    for (const std::shared_ptr<TypeRunner>& r : runners_) r->CheckDeadlines(now);
  }
}

}  // namespace baton::internal
