#include "scheduler/reaper.h"

#include <algorithm>
#include <cstdio>

#include "broker/redis_open.h"
#include "core/keys.h"
#include "scheduler/backoff.h"

namespace baton::internal {

namespace {

// Group names from an XINFO GROUPS reply (each group is a flat [name, value, ...] array). A missing
// stream has no groups.
StatusOr<std::vector<std::string>> GroupNames(const Reply& reply) {
  if (reply.is_error()) {
    if (reply.str.find("no such key") != std::string::npos) return std::vector<std::string>{};
    return StatusFromErrorReply(reply).WithContext("XINFO GROUPS");
  }
  std::vector<std::string> out;
  for (const Reply& group : reply.elements) {
    for (std::size_t i = 0; i + 1 < group.elements.size(); i += 2) {
      if (group.elements[i].AsString() == "name") {
        out.push_back(group.elements[i + 1].AsString());
        break;
      }
    }
  }
  return out;
}

}  // namespace

Reaper::Reaper(Options options) : options_(std::move(options)), rng_(std::random_device{}()) {
  options_.count = std::max(options_.count, 1);
}

Reaper::~Reaper() { Stop(); }

Status Reaper::EnsureConnected() { return internal::EnsureConnected(conn_, options_.redis_url); }

StatusOr<ReapResult> Reaper::RunOnce(const std::string& ns, const std::string& type,
                                     const RetryPolicy& retry) {
  std::lock_guard<std::mutex> lock(mu_);
  Status st = EnsureConnected();
  if (!st.ok()) return st;
  return RunOnceLocked(TypeRef{ns, type}, retry);
}

StatusOr<ReapResult> Reaper::RunOnce(const std::string& ns, const std::string& type) {
  return RunOnce(ns, type, options_.default_retry);
}

StatusOr<ReapResult> Reaper::RunOnceLocked(const TypeRef& type, const RetryPolicy& retry) {
  Keys keys(type.ns);
  const std::string stream = keys.Stream(type.type);
  StatusOr<Reply> info = conn_->Command({"XINFO", "GROUPS", stream});
  if (!info.ok()) return info.status();
  StatusOr<std::vector<std::string>> groups = GroupNames(*info);
  if (!groups.ok()) return groups.status();
  ReapResult total;
  for (const std::string& group : *groups) {
    while (true) {
      // The jitter seed makes each call's backoff jitter independent of other reapers'. The
      // function takes integers of up to 15 digits and mixes the seed modulo 2^31 - 2.
      std::uint64_t seed = rng_() % 2147483646u;
      StatusOr<Reply> reply = conn_->Command(
          {"FCALL", "baton_reclaim", "7", stream, keys.Scheduled(type.type), keys.Dead(type.type),
           keys.Tasks(), keys.Bodies(), keys.Errors(), keys.Events(), group,
           std::to_string(options_.lease.count()), std::to_string(options_.count),
           std::to_string(retry.base.count()), std::to_string(retry.max.count()),
           std::to_string(seed), std::to_string(options_.events_maxlen), options_.name});
      if (!reply.ok()) return reply.status();
      if (reply->is_error()) return StatusFromErrorReply(*reply).WithContext("baton_reclaim");
      if (!reply->is_array() || reply->elements.size() < 3) {
        return Status::Internal("baton_reclaim: unexpected reply shape");
      }
      std::int64_t reclaimed = reply->elements[0].AsInteger();
      total.reclaimed += reclaimed;
      total.retried += reply->elements[1].AsInteger();
      total.dead += reply->elements[2].AsInteger();
      if (reclaimed < options_.count) break;
    }
  }
  return total;
}

StatusOr<ReapResult> Reaper::RunPass() {
  std::lock_guard<std::mutex> lock(mu_);
  Status st = EnsureConnected();
  if (!st.ok()) return st;
  std::vector<Target> targets = options_.targets;
  if (targets.empty()) {
    StatusOr<std::vector<TypeRef>> found = DiscoverTypes(*conn_);
    if (!found.ok()) return found.status();
    for (TypeRef& t : *found) targets.push_back({std::move(t), options_.default_retry});
  }
  ReapResult total;
  for (const Target& t : targets) {
    StatusOr<ReapResult> one = RunOnceLocked(t.type, t.retry);
    if (!one.ok()) return one.status();
    total.reclaimed += one->reclaimed;
    total.retried += one->retried;
    total.dead += one->dead;
  }
  return total;
}

Status Reaper::Start() {
  if (thread_.joinable()) return Status::Conflict("reaper: already started");
  {
    std::lock_guard<std::mutex> lock(mu_);
    Status st = EnsureConnected();
    if (!st.ok()) return st.WithContext("reaper");
  }
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void Reaper::Stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_ = true;
    stop_cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void Reaper::Loop() {
  Backoff backoff;
  while (true) {
    StatusOr<ReapResult> pass = RunPass();
    std::chrono::milliseconds wait = options_.interval;
    if (!pass.ok()) {
      wait = std::max(wait, backoff.Next());
      std::fprintf(stderr, "baton reaper: %s (retrying in %lld ms)\n",
                   pass.status().ToString().c_str(), static_cast<long long>(wait.count()));
    } else {
      backoff.Reset();
    }
    std::unique_lock<std::mutex> lock(stop_mu_);
    if (stop_cv_.wait_for(lock, wait, [this] { return stopping_; })) return;
  }
}

}  // namespace baton::internal
