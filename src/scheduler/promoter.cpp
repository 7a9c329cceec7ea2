#include "scheduler/promoter.h"

#include <algorithm>
#include <cstdio>

#include "broker/redis_open.h"
#include "core/keys.h"
#include "scheduler/backoff.h"

namespace baton::internal {

namespace {

std::vector<std::string> PromoteArgv(const std::string& ns, const std::string& type, int limit,
                                     std::size_t events_maxlen) {
  Keys keys(ns);
  return {"FCALL",
          "baton_promote",
          "5",
          keys.Scheduled(type),
          keys.Stream(type),
          keys.Tasks(),
          keys.Bodies(),
          keys.Events(),
          std::to_string(limit),
          std::to_string(events_maxlen)};
}

// Parses [promoted, next_due_ms, now_ms].
StatusOr<PromoteResult> ParsePromoteReply(const Reply& reply) {
  if (reply.is_error()) return StatusFromErrorReply(reply).WithContext("baton_promote");
  if (!reply.is_array() || reply.elements.size() < 3) {
    return Status::Internal("baton_promote: unexpected reply shape");
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
  options_.limit = std::max(options_.limit, 1);
}

Promoter::~Promoter() { Stop(); }

Status Promoter::EnsureConnected() { return internal::EnsureConnected(conn_, options_.redis_url); }

StatusOr<PromoteResult> Promoter::RunOnce(const std::string& ns, const std::string& type) {
  std::lock_guard<std::mutex> lock(mu_);
  Status st = EnsureConnected();
  if (!st.ok()) return st;
  return RunOnceLocked(ns, type);
}

StatusOr<PromoteResult> Promoter::RunOnceLocked(const std::string& ns, const std::string& type) {
  const std::vector<std::string> argv =
      PromoteArgv(ns, type, options_.limit, options_.events_maxlen);
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

StatusOr<PromoteResult> Promoter::RunPass() {
  std::lock_guard<std::mutex> lock(mu_);
  Status st = EnsureConnected();
  if (!st.ok()) return st;
  std::vector<TypeRef> types = options_.types;
  if (types.empty()) {
    StatusOr<std::vector<TypeRef>> found = DiscoverTypes(*conn_);
    if (!found.ok()) return found.status();
    types = std::move(*found);
  }
  PromoteResult total;
  if (types.empty()) return total;
  // First call for every type in one round trip; only a type that filled its limit needs more.
  for (const TypeRef& t : types) {
    conn_->Append(PromoteArgv(t.ns, t.type, options_.limit, options_.events_maxlen));
  }
  StatusOr<std::vector<Reply>> replies = conn_->Flush();
  if (!replies.ok()) return replies.status();
  for (std::size_t i = 0; i < types.size() && i < replies->size(); ++i) {
    StatusOr<PromoteResult> one = ParsePromoteReply((*replies)[i]);
    if (!one.ok()) return one.status();
    promoted_total_ += static_cast<std::uint64_t>(one->promoted);
    if (one->promoted >= options_.limit) {
      StatusOr<PromoteResult> rest = RunOnceLocked(types[i].ns, types[i].type);
      if (!rest.ok()) return rest.status();
      one->promoted += rest->promoted;
      one->next_due_ms = rest->next_due_ms;
      one->now_ms = rest->now_ms;
    }
    Merge(*one, &total);
  }
  return total;
}

std::uint64_t Promoter::promoted_total() const {
  std::lock_guard<std::mutex> lock(mu_);
  return promoted_total_;
}

Status Promoter::Start() {
  if (thread_.joinable()) return Status::Conflict("promoter: already started");
  StatusOr<RedisEndpoint> endpoint = RedisEndpoint::Parse(options_.redis_url);
  if (!endpoint.ok()) return endpoint.status().WithContext("promoter");
  {
    std::lock_guard<std::mutex> lock(mu_);
    Status st = EnsureConnected();
    if (!st.ok()) return st.WithContext("promoter");
  }
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stopping_ = false;
  }
  subscriber_ = std::make_unique<WakeupSubscriber>(
      *endpoint, [this](const WakeupMessage& msg) { OnWakeup(msg); },
      [this] {
        // Messages may have been lost while disconnected: run a pass now.
        std::lock_guard<std::mutex> lock(wake_mu_);
        woken_ = true;
        wake_cv_.notify_all();
      });
  Status sub = subscriber_->Start();
  if (!sub.ok()) {
    // Not fatal: the loop still runs every interval and the subscriber keeps retrying.
    std::fprintf(stderr, "baton promoter: %s\n", sub.ToString().c_str());
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

void Promoter::OnWakeup(const WakeupMessage& msg) {
  if (!options_.types.empty() && std::find(options_.types.begin(), options_.types.end(),
                                           TypeRef{msg.ns, msg.type}) == options_.types.end()) {
    return;  // not one of ours
  }
  std::lock_guard<std::mutex> lock(wake_mu_);
  if (msg.due_ms < planned_wake_ms_) {
    woken_ = true;
    wake_cv_.notify_all();
  }
}

void Promoter::Loop() {
  Backoff backoff;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      if (stopping_) return;
      woken_ = false;
      // Until this pass has computed a plan, any wake-up message counts.
      planned_wake_ms_ = INT64_MAX;
    }
    StatusOr<PromoteResult> pass = RunPass();
    auto now = std::chrono::steady_clock::now();
    std::chrono::milliseconds wait = options_.interval;
    std::int64_t planned = INT64_MAX;
    if (!pass.ok()) {
      wait = backoff.Next();
      std::fprintf(stderr, "baton promoter: %s (retrying in %lld ms)\n",
                   pass.status().ToString().c_str(), static_cast<long long>(wait.count()));
    } else {
      backoff.Reset();
      if (pass->next_due_ms >= 0) {
        std::int64_t until_due = std::max<std::int64_t>(pass->next_due_ms - pass->now_ms, 0);
        wait = std::min(wait, std::chrono::milliseconds(until_due));
      }
      // now_ms is 0 when the pass found no type to promote (no server clock was read): then any
      // wake-up message must count, or the first delayed task of a new type waits a whole interval.
      if (pass->now_ms > 0) planned = pass->now_ms + wait.count();
    }
    std::unique_lock<std::mutex> lock(wake_mu_);
    // A message that arrived during the pass and is earlier than the new plan wakes us at once;
    // woken_ set during the pass with a later due is harmless (one extra pass).
    planned_wake_ms_ = planned;
    wake_cv_.wait_until(lock, now + wait, [this] { return stopping_ || woken_; });
  }
}

}  // namespace baton::internal
