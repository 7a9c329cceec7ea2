#include "scheduler/promoter.h"

#include <algorithm>
#include <climits>

#include "broker/functions.h"
#include "broker/redis_open.h"
#include "core/backoff.h"

namespace baton::internal {

namespace {

using Clock = std::chrono::steady_clock;

std::int64_t SteadyMs(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// Parses {promoted, next_due_ms, now_ms}.
StatusOr<PromoteResult> ParsePromoteReply(const Reply& reply) {
  if (reply.is_error()) return StatusFromErrorReply(reply).WithContext("baton_v2_promote");
  if (!reply.is_array() || reply.elements.size() < 3) {
    return Status::Internal("baton_v2_promote: unexpected reply shape");
  }
  PromoteResult r;
  r.promoted = reply.elements[0].AsInteger();
  r.next_due_ms = reply.elements[1].AsInteger();
  r.now_ms = reply.elements[2].AsInteger();
  return r;
}

// Folds one type's result into a pass result.
void Merge(const PromoteResult& one, PromoteResult* total) {
  total->promoted += one.promoted;
  total->now_ms = std::max(total->now_ms, one.now_ms);
  if (one.next_due_ms >= 0 && (total->next_due_ms < 0 || one.next_due_ms < total->next_due_ms)) {
    total->next_due_ms = one.next_due_ms;
  }
}

}  // namespace

Promoter::Promoter(Options options) : options_(std::move(options)) {
  options_.limit = std::clamp(options_.limit, 1, 10000);
  if (options_.interval.count() < 1) options_.interval = std::chrono::milliseconds(1);
  std::sort(options_.types.begin(), options_.types.end());
}

Promoter::~Promoter() { Stop(); }

std::vector<TypeRef> Promoter::CurrentTypes() const {
  if (!options_.types.empty()) return options_.types;
  if (!options_.types_source) return {};
  std::vector<TypeRef> types = options_.types_source();
  std::sort(types.begin(), types.end());
  types.erase(std::unique(types.begin(), types.end()), types.end());
  return types;
}

StatusOr<PromoteResult> Promoter::RunOnce(const std::string& ns, const std::string& type) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status st = EnsureConnected(conn_, options_.redis); !st.ok()) return st;
  return RunOnceLocked(TypeRef{ns, type});
}

StatusOr<PromoteResult> Promoter::RunOnceLocked(const TypeRef& type) {
  const fn::Command argv =
      fn::Promote(type.ns, type.type, static_cast<std::size_t>(options_.limit));
  PromoteResult total;
  while (true) {
    StatusOr<Reply> reply = conn_->Command(argv);
    if (!reply.ok()) return reply.status();
    StatusOr<PromoteResult> one = ParsePromoteReply(*reply);
    if (!one.ok()) return one.status();
    promoted_total_ += static_cast<std::uint64_t>(one->promoted);
    total.promoted += one->promoted;
    total.next_due_ms = one->next_due_ms;
    total.now_ms = one->now_ms;
    if (one->promoted < options_.limit) return total;
  }
}

StatusOr<std::vector<PromoteResult>> Promoter::PromoteTypes(const std::vector<TypeRef>& types) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status st = EnsureConnected(conn_, options_.redis); !st.ok()) return st;
  std::vector<PromoteResult> out;
  if (types.empty()) return out;
  // First call for every type in one round trip; only a type that filled its limit needs more.
  for (const TypeRef& t : types) {
    conn_->Append(fn::Promote(t.ns, t.type, static_cast<std::size_t>(options_.limit)));
  }
  StatusOr<std::vector<Reply>> replies = conn_->Flush();
  if (!replies.ok()) return replies.status();
  for (std::size_t i = 0; i < types.size() && i < replies->size(); ++i) {
    StatusOr<PromoteResult> one = ParsePromoteReply((*replies)[i]);
    if (!one.ok()) return one.status().WithContext(types[i].ns + "/" + types[i].type);
    promoted_total_ += static_cast<std::uint64_t>(one->promoted);
    if (one->promoted >= options_.limit) {
      StatusOr<PromoteResult> rest = RunOnceLocked(types[i]);
      if (!rest.ok()) return rest.status();
      one->promoted += rest->promoted;
      one->next_due_ms = rest->next_due_ms;
      one->now_ms = rest->now_ms;
    }
    out.push_back(*one);
  }
  return out;
}

StatusOr<PromoteResult> Promoter::RunPass() {
  std::vector<TypeRef> types = CurrentTypes();
  StatusOr<std::vector<PromoteResult>> results = PromoteTypes(types);
  if (!results.ok()) return results.status();
  PromoteResult total;
  for (const PromoteResult& one : *results) Merge(one, &total);
  return total;
}

Status Promoter::Start() {
  if (thread_.joinable()) return Status::Conflict("promoter: already started");
  StatusOr<RedisEndpoint> endpoint = RedisEndpoint::FromOptions(options_.redis);
  if (!endpoint.ok()) return endpoint.status().WithContext("promoter");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Status st = EnsureConnected(conn_, options_.redis); !st.ok()) {
      return st.WithContext("promoter");
    }
  }
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stopping_ = false;
  }
  if (options_.subscribe) {
    WakeupSubscriber::Handlers handlers;
    handlers.on_wakeup = [this](const WakeupMessage& msg) { Notify(msg); };
    handlers.on_resubscribed = [this] { Resync(); };
    subscriber_ = std::make_unique<WakeupSubscriber>(*endpoint, std::move(handlers), options_.log);
    // A failed first subscribe is not fatal: the subscriber logs it and keeps retrying, and the
    // loop's safety pass bounds the delay meanwhile.
    (void)subscriber_->Start();
  }
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void Promoter::Stop() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stopping_ = true;
    wake_cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  if (subscriber_) subscriber_->Stop();
}

void Promoter::Notify(const WakeupMessage& msg) {
  TypeRef type{msg.ns, msg.type};
  if (!options_.types.empty() &&
      !std::binary_search(options_.types.begin(), options_.types.end(), type)) {
    return;  // not one of ours
  }
  std::lock_guard<std::mutex> lock(wake_mu_);
  auto [it, inserted] = hints_.emplace(std::move(type), msg.due_ms);
  if (!inserted) it->second = std::min(it->second, msg.due_ms);
  if (msg.due_ms < planned_wake_ms_) {
    woken_ = true;
    wake_cv_.notify_all();
  }
}

void Promoter::Poke() {
  std::lock_guard<std::mutex> lock(wake_mu_);
  woken_ = true;
  wake_cv_.notify_all();
}

void Promoter::Resync() {
  std::lock_guard<std::mutex> lock(wake_mu_);
  resync_ = true;
  woken_ = true;
  wake_cv_.notify_all();
}

std::int64_t Promoter::ServerNowLocked() const { return SteadyMs(Clock::now()) + clock_offset_ms_; }

void Promoter::Loop() {
  Backoff backoff;
  OutageLog outage("promoter");
  auto next_full = Clock::now();  // the first pass checks every type
  while (true) {
    // Asked outside wake_mu_: the source has its own lock.
    const std::vector<TypeRef> types = CurrentTypes();
    std::vector<TypeRef> due;
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      if (stopping_) return;
      woken_ = false;
      // Until this pass has made a plan, any wake-up message counts.
      planned_wake_ms_ = INT64_MAX;
      if (resync_ || Clock::now() >= next_full) {
        next_due_.clear();
        next_full = Clock::now() + options_.interval;
      }
      resync_ = false;
      for (const auto& [type, due_ms] : hints_) {
        auto it = next_due_.find(type);
        if (it != next_due_.end() && (it->second < 0 || due_ms < it->second)) it->second = due_ms;
      }
      hints_.clear();
      std::erase_if(next_due_, [&](const auto& entry) {
        return !std::binary_search(types.begin(), types.end(), entry.first);
      });
      const std::int64_t now = ServerNowLocked();
      for (const TypeRef& t : types) {
        auto it = next_due_.find(t);
        if (it == next_due_.end() || (it->second >= 0 && it->second <= now)) due.push_back(t);
      }
    }

    StatusOr<std::vector<PromoteResult>> results = PromoteTypes(due);
    const auto after = Clock::now();
    std::chrono::milliseconds wait{0};
    std::unique_lock<std::mutex> lock(wake_mu_);
    if (!results.ok()) {
      wait = backoff.Next();
      outage.Failed(options_.log, results.status(), wait);
      next_due_.clear();  // unknown again: the next pass checks every type
    } else {
      backoff.Reset();
      outage.Succeeded(options_.log);
      // Each reply's clock was read before `after`: the largest offset is the closest one.
      std::int64_t offset = INT64_MIN;
      for (std::size_t i = 0; i < results->size(); ++i) {
        const PromoteResult& r = (*results)[i];
        next_due_[due[i]] = r.next_due_ms;
        offset = std::max(offset, r.now_ms - SteadyMs(after));
      }
      if (offset != INT64_MIN) {
        clock_offset_ms_ = offset;
        clock_known_ = true;
      }
      wait = std::chrono::ceil<std::chrono::milliseconds>(next_full - after);
      const std::int64_t now = ServerNowLocked();
      for (const auto& [type, due_ms] : next_due_) {
        if (due_ms >= 0)
          wait = std::min(wait, std::chrono::milliseconds(std::max<std::int64_t>(due_ms - now, 0)));
      }
      wait = std::max(wait, std::chrono::milliseconds(0));
      // Without a reply yet (no type served) the server's clock is unknown: any message counts.
      planned_wake_ms_ = clock_known_ ? now + wait.count() : INT64_MAX;
    }
    // A message that arrived during the pass set woken_ (the plan was INT64_MAX): go round again.
    wake_cv_.wait_until(lock, after + wait, [this] { return stopping_ || woken_; });
  }
}

}  // namespace baton::internal
