#include "scheduler/cron_ticker.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include "broker/functions.h"
#include "broker/keys.h"
#include "broker/redis_open.h"
#include "core/backoff.h"
#include "cron/cron_due.h"

namespace baton::internal {

namespace {

using std::chrono::sys_seconds;

std::optional<std::int64_t> ParseInt(const std::string& s) {
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The latest fire time <= `x`, given a fire time `known` <= x. Binary search on the monotone
// predicate Next(a) > x (false below the answer, true from it on): ~log2(x - known) calls of
// Next, so a per-second job idle for a year costs ~25 calls, not 31 million.
sys_seconds LatestTickAtOrBefore(const CronSchedule& schedule, sys_seconds known, sys_seconds x) {
  std::int64_t lo = known.time_since_epoch().count();
  std::int64_t hi = x.time_since_epoch().count();
  while (lo < hi) {
    std::int64_t mid = lo + (hi - lo) / 2;
    if (schedule.Next(sys_seconds(std::chrono::seconds(mid))) > x) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return sys_seconds(std::chrono::seconds(lo));
}

// Flat [field, value, ...] of an HGETALL reply into a sorted map.
std::map<std::string, std::string> HashFromReply(const Reply& reply) {
  std::map<std::string, std::string> out;
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) {
    out[reply.elements[i].AsString()] = reply.elements[i + 1].AsString();
  }
  return out;
}

}  // namespace

CronTicker::CronTicker(Options options) : options_(std::move(options)) {
  if (options_.max_sleep.count() < 1) options_.max_sleep = std::chrono::milliseconds(1);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

CronTicker::~CronTicker() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

Status CronTicker::Start() {
  if (thread_.joinable()) return Status::Conflict("cron: already started");
  if (auto endpoint = RedisEndpoint::FromOptions(options_.redis); !endpoint.ok()) {
    return endpoint.status().WithContext("cron");
  }
  if (wake_fd_ < 0) return Status::Internal("cron: eventfd failed");
  std::uint64_t drained = 0;
  while (read(wake_fd_, &drained, sizeof drained) > 0) {
  }
  stopping_ = false;
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void CronTicker::Stop() {
  stopping_ = true;
  if (wake_fd_ >= 0) {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
}

Status CronTicker::EnsureConnected() {
  if (Status st = internal::EnsureConnected(conn_, options_.redis); !st.ok()) return st;
  if (!client_) {
    ClientOptions co;
    co.redis = options_.redis;
    StatusOr<std::unique_ptr<Client>> client = Client::Connect(co);
    if (!client.ok()) return client.status();
    client_ = std::move(*client);
  }
  return Status::Ok();
}

StatusOr<std::chrono::system_clock::time_point> CronTicker::ServerNow() {
  StatusOr<Reply> reply = conn_->CommandAt(kCronStateKey, {"TIME"});
  if (!reply.ok()) return reply.status();
  if (!reply->is_array() || reply->elements.size() != 2) {
    return Status::Internal("cron: TIME: unexpected reply");
  }
  return std::chrono::system_clock::time_point(
      std::chrono::seconds(reply->elements[0].AsInteger()) +
      std::chrono::microseconds(reply->elements[1].AsInteger()));
}

const CronTicker::CachedJob& CronTicker::Parse(const std::string& name, const std::string& json) {
  auto it = cache_.find(name);
  if (it != cache_.end() && it->second.json == json) return it->second;
  CachedJob entry;
  entry.json = json;
  StatusOr<CronJob> job = CronJob::FromJson(name, json);
  if (!job.ok()) {
    entry.error = job.status().message();
  } else {
    StatusOr<CronSchedule> schedule = job->MakeSchedule();
    if (!schedule.ok()) {
      entry.error = schedule.status().message();
    } else {
      entry.job = std::move(*job);
      entry.schedule = std::move(*schedule);
    }
  }
  return cache_[name] = std::move(entry);
}

StatusOr<CronRunResult> CronTicker::RunOnce(std::chrono::system_clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status st = EnsureConnected(); !st.ok()) return st.WithContext("cron");
  return RunOnceLocked(now);
}

StatusOr<CronRunResult> CronTicker::RunOnceLocked(std::chrono::system_clock::time_point now) {
  const sys_seconds now_s = std::chrono::floor<std::chrono::seconds>(now);
  const std::string state_key(kCronStateKey);
  CronRunResult result;

  // The state is read with the definitions when the last pass saw some (one round trip), and
  // not at all while there are none (an idle Redis without cron jobs: one command per pass).
  const bool expect_jobs = !cache_.empty();
  conn_->Append({"HGETALL", std::string(Keys::kCron)});
  if (expect_jobs) conn_->Append({"HGETALL", state_key});
  StatusOr<std::vector<Reply>> replies = conn_->Flush();
  if (!replies.ok()) return replies.status().WithContext("cron");
  for (const Reply& r : *replies) {
    if (r.is_error()) return Status::Internal("cron: HGETALL: " + r.str);
  }
  const std::map<std::string, std::string> definitions = HashFromReply((*replies)[0]);
  if (!expect_jobs && !definitions.empty()) {
    StatusOr<Reply> state_reply = conn_->Command({"HGETALL", state_key});
    if (!state_reply.ok()) return state_reply.status().WithContext("cron");
    if (state_reply->is_error()) return Status::Internal("cron: HGETALL: " + state_reply->str);
    replies->push_back(std::move(*state_reply));
  }
  std::map<std::string, std::string> state =
      replies->size() > 1 ? HashFromReply((*replies)[1]) : std::map<std::string, std::string>{};

  // Forget cached definitions of deleted jobs.
  std::erase_if(cache_, [&](const auto& kv) { return !definitions.contains(kv.first); });

  struct Active {
    const CronJob* job;
    const CronSchedule* schedule;
    std::optional<std::int64_t> handled;
  };
  std::vector<Active> active;
  std::vector<std::string> need_baseline;
  for (const auto& [name, json] : definitions) {
    const CachedJob& cached = Parse(name, json);
    if (!cached.job) {
      result.invalid[name] = cached.error;
      continue;
    }
    if (!options_.namespaces.empty() &&
        std::find(options_.namespaces.begin(), options_.namespaces.end(), cached.job->ns) ==
            options_.namespaces.end()) {
      continue;  // another scheduler's namespace
    }
    std::optional<std::int64_t> handled;
    if (auto it = state.find(name); it != state.end()) handled = ParseInt(it->second);
    if (cached.job->enabled) {
      ++result.enabled_jobs;
      if (!handled) need_baseline.push_back(name);
    }
    active.push_back(Active{&*cached.job, &*cached.schedule, handled});
  }

  // A job seen for the first time starts now. HSETNX so that every ticker adopts the baseline of
  // the first one; then read back what won.
  if (!need_baseline.empty()) {
    const std::string now_text = std::to_string(now_s.time_since_epoch().count());
    std::vector<std::string> hmget = {"HMGET", state_key};
    for (const std::string& name : need_baseline) {
      conn_->Append({"HSETNX", state_key, name, now_text});
      hmget.push_back(name);
    }
    conn_->Append(hmget);
    StatusOr<std::vector<Reply>> init = conn_->Flush();
    if (!init.ok()) return init.status().WithContext("cron");
    const Reply& values = init->back();
    if (values.is_error()) return Status::Internal("cron: HMGET: " + values.str);
    for (std::size_t i = 0; i < need_baseline.size() && i < values.elements.size(); ++i) {
      // An unreadable value falls back to now; the compare-and-set below then repairs it.
      state[need_baseline[i]] =
          values.elements[i].is_nil() ? now_text : values.elements[i].AsString();
    }
    for (Active& a : active) {
      if (!a.handled) {
        if (auto it = state.find(a.job->name); it != state.end()) a.handled = ParseInt(it->second);
        if (!a.handled) a.handled = now_s.time_since_epoch().count();
      }
    }
  }

  std::vector<std::pair<std::string, std::int64_t>> advance;  // job -> new state
  for (const Active& a : active) {
    const CronJob& job = *a.job;
    const CronSchedule& schedule = *a.schedule;
    if (!a.handled) continue;  // disabled and never enabled: nothing to keep track of
    const sys_seconds handled{std::chrono::seconds(*a.handled)};
    const sys_seconds first_due = schedule.Next(handled);
    if (job.enabled) {
      sys_seconds next = schedule.Next(std::max(handled, now_s));
      if (!result.next_fire || next < *result.next_fire) result.next_fire = next;
    }
    if (first_due > now_s) continue;  // nothing due
    if (!job.enabled) {
      // Ticks of a disabled job are dropped as they pass, so that enabling it again does not
      // catch up the time it was off.
      advance.emplace_back(
          job.name, LatestTickAtOrBefore(schedule, first_due, now_s).time_since_epoch().count());
      continue;
    }
    const std::vector<sys_seconds> due =
        DueTicks(schedule, job.missed, handled, now_s, options_.grace);
    const sys_seconds on_time_after = std::max(handled, now_s - options_.grace);
    const bool missed = first_due <= on_time_after;
    if (missed) result.missed[job.name] = first_due.time_since_epoch().count();
    for (const sys_seconds tick : due) {
      Task task = TickTask(job, tick);
      task.extra["cron"] = {{"job", job.name}, {"tick", tick.time_since_epoch().count()}};
      StatusOr<EnqueueResult> enqueued = client_->EnqueueTask(task);
      if (!enqueued.ok()) {
        if (enqueued.status().code() == StatusCode::kInvalidArgument) {
          result.refused[job.name] = enqueued.status().message();
          break;  // every tick of this job builds the same task: it would be refused too
        }
        client_.reset();  // reconnect on the next pass
        return enqueued.status().WithContext("cron: enqueue " + task.task_id);
      }
      CronFire fire;
      fire.job = job.name;
      fire.tick = tick.time_since_epoch().count();
      fire.task_id = task.task_id;
      fire.ns = job.ns;
      fire.task_type = job.task_type;
      fire.duplicate = enqueued->outcome == EnqueueOutcome::kDuplicate;
      fire.catch_up = missed && job.missed == MissedTickPolicy::kRunOnce && tick == first_due;
      if (!fire.duplicate) fired_total_.fetch_add(1);
      result.fired.push_back(std::move(fire));
    }
    const sys_seconds from = due.empty() ? first_due : std::max(first_due, due.back());
    advance.emplace_back(job.name,
                         LatestTickAtOrBefore(schedule, from, now_s).time_since_epoch().count());
  }

  // The state moves after the enqueues: a ticker dying in between leaves the ticks due, and the
  // next pass (of any ticker) enqueues them again as duplicates, which enqueue drops. The
  // compare-and-set (baton_v2_cron_mark) only moves it forward.
  if (!advance.empty()) {
    for (const auto& [name, tick] : advance) conn_->Append(fn::CronMark(name, tick));
    StatusOr<std::vector<Reply>> cas = conn_->Flush();
    if (!cas.ok()) return cas.status().WithContext("cron: advance state");
    for (const Reply& r : *cas) {
      if (r.is_error()) return StatusFromErrorReply(r).WithContext("cron: baton_v2_cron_mark");
    }
  }
  return result;
}

void CronTicker::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!stopping_) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {-1, POLLIN, 0}};
    nfds_t n = 1;
    if (listener_) {
      fds[1].fd = listener_->fd();
      n = 2;
    }
    int ready = poll(fds, n, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return;
    if (ready <= 0) continue;
    if (fds[0].revents != 0) return;  // Stop()
    if (n == 2 && fds[1].revents != 0) {
      StatusOr<std::vector<PubSubMessage>> messages = listener_->ReadAvailable();
      if (!messages.ok()) {
        listener_.reset();  // lost it: the loop subscribes again
        return;
      }
      if (!messages->empty()) return;  // a job changed: run a pass now
    }
  }
}

void CronTicker::Loop() {
  const RedisEndpoint endpoint = *RedisEndpoint::FromOptions(options_.redis);
  Backoff backoff;
  OutageLog outage("cron");
  Backoff subscribe_backoff;
  auto next_subscribe = std::chrono::steady_clock::now();
  std::map<std::string, std::string> last_invalid;  // report a broken definition once
  while (!stopping_) {
    // Subscribe before the pass, so that an edit made during the pass wakes the next wait.
    if (!listener_ && std::chrono::steady_clock::now() >= next_subscribe) {
      StatusOr<std::unique_ptr<Subscription>> opened =
          Subscription::Open(endpoint, {std::string(kCronChangedChannel)});
      if (opened.ok()) {
        listener_ = std::move(*opened);
        subscribe_backoff.Reset();
      } else {
        next_subscribe = std::chrono::steady_clock::now() + subscribe_backoff.Next();
      }
    }
    std::optional<std::chrono::system_clock::time_point> now;
    StatusOr<CronRunResult> pass = Status::Unavailable("cron: not run");
    {
      std::lock_guard<std::mutex> lock(mu_);
      Status st = EnsureConnected();
      if (st.ok()) {
        StatusOr<std::chrono::system_clock::time_point> server_now = ServerNow();
        if (server_now.ok()) {
          now = *server_now;
          pass = RunOnceLocked(*now);
        } else {
          pass = server_now.status();
        }
      } else {
        pass = st.WithContext("cron");
      }
      if (!pass.ok() && pass.status().code() != StatusCode::kInvalidArgument) {
        conn_.reset();
        client_.reset();
      }
    }
    if (!pass.ok()) {
      const std::chrono::milliseconds wait = backoff.Next();
      outage.Failed(options_.log, pass.status(), wait);
      Wait(wait);
      continue;
    }
    backoff.Reset();
    outage.Succeeded(options_.log);
    if (options_.on_pass && (!pass->fired.empty() || !pass->missed.empty() ||
                             !pass->refused.empty() || pass->invalid != last_invalid)) {
      options_.on_pass(*pass);
    }
    last_invalid = pass->invalid;
    std::chrono::milliseconds wait = options_.max_sleep;
    if (pass->next_fire) {
      // +1 ms: wake just after the tick's second starts, never just before it.
      auto until = std::chrono::ceil<std::chrono::milliseconds>(*pass->next_fire - *now) +
                   std::chrono::milliseconds(1);
      wait = std::clamp(until, std::chrono::milliseconds(1), options_.max_sleep);
    }
    Wait(wait);
  }
  listener_.reset();
}

}  // namespace baton::internal
