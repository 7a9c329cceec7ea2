#include "scheduler/reaper.h"

#include <algorithm>
#include <map>

#include "broker/keys.h"
#include "broker/redis_open.h"
#include "core/backoff.h"

namespace baton::internal {

namespace {

using Clock = std::chrono::steady_clock;

// Parses {reclaimed, retried, dead, next_deadline_ms, now_ms}.
StatusOr<ReapResult> ParseReclaimReply(const Reply& reply) {
  if (reply.is_error()) return StatusFromErrorReply(reply).WithContext("baton_v2_reclaim");
  if (!reply.is_array() || reply.elements.size() < 5) {
    return Status::Internal("baton_v2_reclaim: unexpected reply shape");
  }
  ReapResult r;
  r.reclaimed = reply.elements[0].AsInteger();
  r.retried = reply.elements[1].AsInteger();
  r.dead = reply.elements[2].AsInteger();
  r.next_deadline_ms = reply.elements[3].AsInteger();
  r.now_ms = reply.elements[4].AsInteger();
  return r;
}

// More leases had expired than one call takes: call again.
bool MoreExpired(const ReapResult& r) {
  return r.next_deadline_ms >= 0 && r.next_deadline_ms <= r.now_ms;
}

void Add(const ReapResult& one, ReapResult* total) {
  total->reclaimed += one.reclaimed;
  total->retried += one.retried;
  total->dead += one.dead;
  total->now_ms = std::max(total->now_ms, one.now_ms);
  if (one.next_deadline_ms >= 0 &&
      (total->next_deadline_ms < 0 || one.next_deadline_ms < total->next_deadline_ms)) {
    total->next_deadline_ms = one.next_deadline_ms;
  }
}

}  // namespace

Reaper::Reaper(Options options) : options_(std::move(options)), rng_(std::random_device{}()) {
  options_.count = std::clamp(options_.count, 1, 1000);
  if (options_.interval.count() < 1) options_.interval = std::chrono::milliseconds(1);
  std::sort(options_.targets.begin(), options_.targets.end(),
            [](const Target& a, const Target& b) { return a.type < b.type; });
}

Reaper::~Reaper() { Stop(); }

std::vector<Reaper::Target> Reaper::CurrentTargets() const {
  if (!options_.targets.empty()) return options_.targets;
  std::vector<Target> out;
  if (!options_.types_source) return out;
  std::vector<TypeRef> types = options_.types_source();
  std::sort(types.begin(), types.end());
  types.erase(std::unique(types.begin(), types.end()), types.end());
  for (TypeRef& t : types) out.push_back({std::move(t), options_.default_retry});
  return out;
}

fn::Command Reaper::ReclaimCommand(const Target& target) {
  // The jitter seed makes each call's backoff jitter independent of other reapers'.
  return fn::Reclaim(target.type.ns, target.type.type, static_cast<std::size_t>(options_.count),
                     target.retry.base.count(), target.retry.max.count(), rng_(), options_.name);
}

StatusOr<ReapResult> Reaper::RunOnce(const std::string& ns, const std::string& type,
                                     const RetryPolicy& retry) {
  StatusOr<std::vector<ReapResult>> results = ReclaimTargets({Target{{ns, type}, retry}});
  if (!results.ok()) return results.status();
  return results->front();
}

StatusOr<ReapResult> Reaper::RunOnce(const std::string& ns, const std::string& type) {
  return RunOnce(ns, type, options_.default_retry);
}

StatusOr<ReapResult> Reaper::RunPass() {
  StatusOr<std::vector<ReapResult>> results = ReclaimTargets(CurrentTargets());
  if (!results.ok()) return results.status();
  ReapResult total;
  for (const ReapResult& one : *results) Add(one, &total);
  return total;
}

StatusOr<std::vector<ReapResult>> Reaper::ReclaimTargets(const std::vector<Target>& targets) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status st = EnsureConnected(conn_, options_.redis); !st.ok()) return st;
  std::vector<ReapResult> out;
  if (targets.empty()) return out;
  for (const Target& t : targets) conn_->Append(ReclaimCommand(t));
  StatusOr<std::vector<Reply>> replies = conn_->Flush();
  if (!replies.ok()) return replies.status();
  for (std::size_t i = 0; i < targets.size() && i < replies->size(); ++i) {
    const TypeRef& type = targets[i].type;
    StatusOr<ReapResult> first = ParseReclaimReply((*replies)[i]);
    if (!first.ok()) return first.status().WithContext(type.ns + "/" + type.type);
    ReapResult total = *first;
    // Every call removes each expired lease it reads, so this ends.
    for (ReapResult last = *first; MoreExpired(last);) {
      StatusOr<Reply> reply = conn_->Command(ReclaimCommand(targets[i]));
      if (!reply.ok()) return reply.status();
      StatusOr<ReapResult> next = ParseReclaimReply(*reply);
      if (!next.ok()) return next.status().WithContext(type.ns + "/" + type.type);
      last = *next;
      total.reclaimed += last.reclaimed;
      total.retried += last.retried;
      total.dead += last.dead;
      total.next_deadline_ms = last.next_deadline_ms;
      total.now_ms = last.now_ms;
    }
    out.push_back(total);
  }
  return out;
}

Status Reaper::Start() {
  if (thread_.joinable()) return Status::Conflict("reaper: already started");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Status st = EnsureConnected(conn_, options_.redis); !st.ok()) {
      return st.WithContext("reaper");
    }
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

StatusOr<std::vector<Reaper::GroupCounts>> Reaper::CountGroups(const std::vector<Target>& targets) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status st = EnsureConnected(conn_, options_.redis); !st.ok()) return st;
  for (const Target& t : targets) {
    conn_->Append({"XINFO", "GROUPS", Keys(t.type.ns).Stream(t.type.type)});
  }
  StatusOr<std::vector<Reply>> replies = conn_->Flush();
  if (!replies.ok()) return replies.status();
  if (replies->size() != targets.size()) return Status::Internal("reaper: missing replies");
  std::vector<GroupCounts> out;
  for (const Reply& r : *replies) {
    GroupCounts counts;
    if (r.is_error()) {
      // No stream yet: nothing was ever delivered.
      if (r.str.find("no such key") == std::string::npos) {
        return StatusFromErrorReply(r).WithContext("reaper: XINFO GROUPS");
      }
    } else {
      for (const Reply& group : r.elements) {
        for (std::size_t i = 0; i + 1 < group.elements.size(); i += 2) {
          const std::string field = group.elements[i].AsString();
          if (field == "pending") counts.pending += group.elements[i + 1].AsInteger();
          if (field == "consumers") counts.consumers += group.elements[i + 1].AsInteger();
        }
      }
    }
    out.push_back(counts);
  }
  return out;
}

std::chrono::milliseconds Reaper::UntilNextCheck(std::int64_t deadline_ms,
                                                 std::int64_t now_ms) const {
  if (deadline_ms < 0) return options_.interval;
  return std::chrono::milliseconds(
      std::clamp<std::int64_t>(deadline_ms - now_ms, 0, options_.interval.count()));
}

void Reaper::Loop() {
  Backoff backoff;
  OutageLog outage("reaper");
  // When each type is checked next; a type missing here is checked at once.
  std::map<TypeRef, Clock::time_point> next_check;
  // When each type was last reclaimed; one with consumers is reclaimed at least every
  // prune_every, so that the consumers of gone workers are deleted.
  std::map<TypeRef, Clock::time_point> last_reclaim;
  while (true) {
    const std::vector<Target> targets = CurrentTargets();
    std::vector<TypeRef> served;  // sorted, as targets are
    for (const Target& t : targets) served.push_back(t.type);
    auto unserved = [&](const auto& entry) {
      return !std::binary_search(served.begin(), served.end(), entry.first);
    };
    std::erase_if(next_check, unserved);
    std::erase_if(last_reclaim, unserved);
    std::vector<Target> due;
    for (const Target& t : targets) {
      auto it = next_check.find(t.type);
      if (it == next_check.end() || it->second <= Clock::now()) due.push_back(t);
    }

    // A check reads each due type's pending count (no write, no function call); only a type with
    // pending tasks costs a baton_v2_reclaim call, whose next lease end says when to look again
    // (and one with idle consumers, every prune_every).
    Status status = Status::Ok();
    if (!due.empty()) {
      StatusOr<std::vector<GroupCounts>> counts = CountGroups(due);
      const auto read_at = Clock::now();
      std::vector<Target> held;
      if (!counts.ok()) {
        status = counts.status();
      } else {
        for (std::size_t i = 0; i < due.size(); ++i) {
          const GroupCounts& c = (*counts)[i];
          auto last = last_reclaim.find(due[i].type);
          const bool prune_due =
              c.consumers > 0 &&
              (last == last_reclaim.end() || read_at - last->second >= options_.prune_every);
          if (c.pending > 0 || prune_due) {
            held.push_back(due[i]);
          } else {
            next_check[due[i].type] = read_at + options_.interval;
          }
        }
      }
      if (status.ok() && !held.empty()) {
        StatusOr<std::vector<ReapResult>> results = ReclaimTargets(held);
        const auto reclaimed_at = Clock::now();
        if (!results.ok()) {
          status = results.status();
        } else {
          for (std::size_t i = 0; i < results->size(); ++i) {
            const ReapResult& r = (*results)[i];
            last_reclaim[held[i].type] = reclaimed_at;
            next_check[held[i].type] = reclaimed_at + UntilNextCheck(r.next_deadline_ms, r.now_ms);
            if (r.reclaimed > 0 && options_.on_reclaimed) options_.on_reclaimed(held[i].type, r);
          }
        }
      }
    }

    std::chrono::milliseconds wait = options_.interval;
    if (!status.ok()) {
      wait = backoff.Next();
      outage.Failed(options_.log, status, wait);
    } else {
      backoff.Reset();
      outage.Succeeded(options_.log);
      const auto now = Clock::now();
      for (const auto& [type, at] : next_check) {
        wait = std::min(wait, std::chrono::ceil<std::chrono::milliseconds>(at - now));
      }
      wait = std::max(wait, std::chrono::milliseconds(0));
    }
    std::unique_lock<std::mutex> lock(stop_mu_);
    if (stop_cv_.wait_for(lock, wait, [this] { return stopping_; })) return;
  }
}

}  // namespace baton::internal
