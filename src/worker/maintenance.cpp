#include "worker/maintenance.h"

#include <algorithm>

#include "broker/functions.h"
#include "core/backoff.h"

namespace baton::internal {

namespace {

constexpr std::size_t kPromoteLimit = 1000;  // tasks per baton_v2_promote call
constexpr std::size_t kReclaimCount = 100;   // expired leases per baton_v2_reclaim call
constexpr std::chrono::milliseconds kMinSleep{10};

std::int64_t SteadyMs(Maintenance::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

void Log(const LogFn& log, const Maintenance::Target& t, std::string_view message,
         const std::string& error) {
  if (log) log(LogLevel::kWarn, message, {{"ns", t.ns}, {"type", t.type}, {"error", error}});
}

// The integers of a well-formed reply of `n` integers, or an empty vector.
std::vector<std::int64_t> Integers(const Reply& reply, std::size_t n) {
  std::vector<std::int64_t> out;
  if (!reply.is_array() || reply.elements.size() != n) return out;
  for (const Reply& e : reply.elements) {
    if (e.type != Reply::Type::kInteger) return {};
    out.push_back(e.integer);
  }
  return out;
}

}  // namespace

Maintenance::Maintenance(RedisEndpoint endpoint, std::vector<Target> targets, std::string reaper,
                         LogFn log)
    : endpoint_(std::move(endpoint)),
      targets_(std::move(targets)),
      reaper_(std::move(reaper)),
      log_(std::move(log)),
      rng_(std::random_device{}()) {
  const Clock::time_point now = Clock::now();
  plans_.assign(targets_.size(), Plan{now, now});
}

Maintenance::~Maintenance() { Stop(); }

Status Maintenance::Start() {
  StatusOr<std::unique_ptr<RedisConnection>> conn = RedisConnection::Open(endpoint_);
  if (!conn.ok()) return conn.status();
  conn_ = std::move(*conn);
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void Maintenance::Stop() {
  alarm_.Stop();
  if (thread_.joinable()) thread_.join();
}

void Maintenance::OnRetryScheduled(std::size_t target, std::int64_t due_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  if (target >= plans_.size()) return;
  Clock::time_point due = Clock::now();  // no server time seen yet: ask promote at once
  if (have_offset_) {
    due = Clock::time_point(std::chrono::milliseconds(due_ms - server_offset_ms_));
  }
  if (due < plans_[target].promote_at) {
    plans_[target].promote_at = due;
    alarm_.Ring();
  }
}

Maintenance::Clock::time_point Maintenance::LocalDue(std::int64_t at_ms, std::int64_t now_ms,
                                                     bool progressed, Clock::time_point now) {
  if (at_ms < 0) return now + kMaxSleep;
  // Due now: call again at once when the call made progress (it hit its limit); otherwise (which
  // the functions never report) do not spin.
  const std::int64_t least = progressed ? 0 : kMinSleep.count();
  const std::int64_t wait = std::clamp<std::int64_t>(at_ms - now_ms, least, kMaxSleep.count());
  return now + std::chrono::milliseconds(wait);
}

void Maintenance::Loop() {
  Backoff backoff;
  Clock::time_point wake = Clock::now();
  while (alarm_.SleepUntil(wake)) {
    const Clock::time_point now = Clock::now();
    bool ok = true;
    if (conn_->broken()) {
      Status st = conn_->Reconnect();
      if (!st.ok()) {
        outage_.Failed(log_, st, backoff.Peek());
        ok = false;
      }
    }
    if (ok) ok = Pass(now, backoff.Peek());
    if (!ok) {
      wake = Clock::now() + backoff.Next();
      continue;
    }
    outage_.Succeeded(log_);
    backoff.Reset();
    std::lock_guard<std::mutex> lock(mu_);
    wake = Clock::time_point::max();
    for (const Plan& p : plans_) wake = std::min({wake, p.promote_at, p.reclaim_at});
  }
}

bool Maintenance::Pass(Clock::time_point now, std::chrono::milliseconds retry_in) {
  struct Sent {
    std::size_t target;
    bool promote;
  };
  std::vector<Sent> sent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::size_t i = 0; i < plans_.size(); ++i) {
      if (plans_[i].promote_at <= now) sent.push_back({i, true});
      if (plans_[i].reclaim_at <= now) sent.push_back({i, false});
    }
  }
  for (const Sent& s : sent) {
    const Target& t = targets_[s.target];
    if (s.promote) {
      conn_->Append(fn::Promote(t.ns, t.type, kPromoteLimit));
    } else {
      conn_->Append(fn::Reclaim(t.ns, t.type, kReclaimCount, t.retry.base.count(),
                                t.retry.max.count(), rng_(), reaper_));
    }
  }
  if (sent.empty()) return true;
  StatusOr<std::vector<Reply>> replies = conn_->Flush();
  if (!replies.ok()) {
    outage_.Failed(log_, replies.status(), retry_in);
    return false;
  }
  const Clock::time_point after = Clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  for (std::size_t k = 0; k < sent.size() && k < replies->size(); ++k) {
    const Sent& s = sent[k];
    const Reply& reply = (*replies)[k];
    Plan& plan = plans_[s.target];
    // promote: {promoted, next_due_ms, now_ms}; reclaim: {reclaimed, retried, dead,
    // next_deadline_ms, now_ms}.
    const std::vector<std::int64_t> v = Integers(reply, s.promote ? 3 : 5);
    if (v.empty()) {
      Log(log_, targets_[s.target],
          s.promote ? "maintenance promote failed" : "maintenance reclaim failed",
          reply.is_error() ? StatusFromErrorReply(reply).ToString() : "unexpected reply");
      (s.promote ? plan.promote_at : plan.reclaim_at) = after + kMaxSleep;
      continue;
    }
    const std::int64_t server_now = v.back();
    server_offset_ms_ = server_now - SteadyMs(after);
    have_offset_ = true;
    if (s.promote) {
      plan.promote_at = LocalDue(v[1], server_now, v[0] > 0, after);
    } else {
      plan.reclaim_at = LocalDue(v[3], server_now, v[0] > 0, after);
      if (v[1] > 0) plan.promote_at = after;  // retries scheduled: promote says when they are due
    }
  }
  return true;
}

}  // namespace baton::internal
