#include "daemon.h"

#include <algorithm>

#include "broker/function_library.h"
#include "core/keys.h"
#include "log.h"
#include "scheduler/backoff.h"

namespace baton::batond {

using internal::TypeRef;
using spdlog::level::debug;
using spdlog::level::err;
using spdlog::level::info;
using spdlog::level::warn;

namespace {

constexpr std::chrono::seconds kStatsInterval{60};

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += ',';
    out += s;
  }
  return out;
}

std::string TypesText(const std::vector<TypeRef>& types) {
  std::string out;
  for (const TypeRef& t : types) {
    if (!out.empty()) out += ',';
    out += t.ns + "/" + t.type;
  }
  return out;
}

}  // namespace

Daemon::Daemon(DaemonConfig config) : config_(std::move(config)) {}

Daemon::~Daemon() {
  StopComponents();
  if (health_) health_->Stop();
}

void Daemon::RequestStop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  stop_requested_ = true;
  stop_cv_.notify_all();
}

bool Daemon::WaitForStop(std::chrono::milliseconds ms) {
  std::unique_lock<std::mutex> lock(stop_mu_);
  return stop_cv_.wait_for(lock, ms, [this] { return stop_requested_; });
}

nlohmann::json Daemon::HealthDetails() const {
  return {{"instance", config_.instance},
          {"version", BATON_VERSION},
          {"components",
           {{"promoter", running_ ? "running" : "starting"},
            {"reaper", running_ ? "running" : "starting"},
            {"cron", !config_.cron ? "off"
                     : running_    ? "running"
                                   : "starting"}}},
          {"promoted_total", promoted_total_.load()},
          {"reclaimed_total", reclaimed_total_.load()}};
}

Status Daemon::PrepareRedis() {
  auto endpoint = internal::RedisEndpoint::Parse(config_.redis_url);
  if (!endpoint.ok()) return endpoint.status().WithContext("redis-url");
  internal::Backoff backoff(std::chrono::milliseconds(200), std::chrono::milliseconds(5000));
  while (true) {
    auto conn = internal::RedisConnection::Open(*endpoint);
    Status st = conn.ok() ? Status::Ok() : conn.status();
    if (st.ok() && config_.load_functions) {
      st = internal::LoadFunctionLibrary(**conn);
      if (st.ok()) Log(info, "functions library loaded");
    }
    if (st.ok()) st = internal::CheckFunctionLibrary(**conn);
    if (st.ok()) {
      conn_ = std::move(*conn);
      return st;
    }
    if (st.code() != StatusCode::kUnavailable) return st;
    auto wait = backoff.Next();
    Log(warn, "redis unavailable, retrying",
        {{"error", st.message()}, {"retry_in_ms", static_cast<long long>(wait.count())}});
    if (WaitForStop(wait)) return Status(StatusCode::kCancelled, "stop requested");
  }
}

StatusOr<std::vector<TypeRef>> Daemon::DiscoverServedTypes() {
  if (!conn_ || conn_->broken()) {
    auto endpoint = internal::RedisEndpoint::Parse(config_.redis_url);
    if (!endpoint.ok()) return endpoint.status();
    auto conn = internal::RedisConnection::Open(*endpoint);
    if (!conn.ok()) return conn.status();
    conn_ = std::move(*conn);
  }
  for (const std::string& ns : config_.namespaces) {
    conn_->Append({"SMEMBERS", internal::Keys(ns).Types()});
  }
  auto replies = conn_->Flush();
  if (!replies.ok()) return replies.status();
  std::vector<TypeRef> out;
  for (std::size_t i = 0; i < replies->size(); ++i) {
    const internal::Reply& r = (*replies)[i];
    if (r.is_error()) return internal::StatusFromErrorReply(r);
    for (const internal::Reply& t : r.elements)
      out.push_back({config_.namespaces[i], t.AsString()});
  }
  std::sort(out.begin(), out.end());
  return out;
}

void Daemon::RefreshServedTypes() {
  if (config_.namespaces.empty()) return;
  auto types = DiscoverServedTypes();
  if (!types.ok()) {
    Log(warn, "type discovery failed", {{"error", types.status().message()}});
    return;
  }
  if (served_known_ && *types == served_) return;
  served_ = std::move(*types);
  served_known_ = true;
  Log(info, "serving types", {{"types", TypesText(served_)}});
  // The promoter serves a fixed list (an empty one would mean every namespace): replace it.
  // Start the new one before stopping the old one; two promoters at once are safe.
  std::unique_ptr<internal::Promoter> next;
  if (!served_.empty()) {
    internal::Promoter::Options po;
    po.redis_url = config_.redis_url;
    po.events_maxlen = config_.events_maxlen;
    po.limit = config_.promote_batch;
    po.types = served_;
    next = std::make_unique<internal::Promoter>(po);
    if (Status st = next->Start(); !st.ok()) {
      Log(warn, "promoter start failed", {{"error", st.message()}});
      served_known_ = false;  // try again on the next discovery
      return;
    }
  }
  if (promoter_) {
    promoted_seen_ += promoter_->promoted_total();
    promoter_->Stop();
  }
  promoter_ = std::move(next);
}

Status Daemon::StartComponents() {
  if (config_.namespaces.empty()) {
    internal::Promoter::Options po;
    po.redis_url = config_.redis_url;
    po.events_maxlen = config_.events_maxlen;
    po.limit = config_.promote_batch;
    promoter_ = std::make_unique<internal::Promoter>(po);
    if (Status st = promoter_->Start(); !st.ok()) return st;
  } else {
    RefreshServedTypes();
  }

  internal::Reaper::Options ro;
  ro.redis_url = config_.redis_url;
  ro.lease = config_.lease;
  ro.count = config_.reclaim_batch;
  ro.interval = config_.reaper_interval;
  ro.events_maxlen = config_.events_maxlen;
  ro.name = config_.instance;
  ro.default_retry.base = config_.retry_base;
  ro.default_retry.max = config_.retry_max;
  // The reaper's passes run on Run()'s thread (ReapOnce) so that each reclaim is logged.
  reaper_ = std::make_unique<internal::Reaper>(ro);

  if (config_.cron) {
    internal::CronTicker::Options co;
    co.redis_url = config_.redis_url;
    co.events_maxlen = config_.events_maxlen;
    co.grace = config_.cron_grace;
    co.namespaces = config_.namespaces;
    co.on_pass = [](const internal::CronRunResult& r) {
      for (const auto& f : r.fired) {
        Log(f.duplicate ? debug : info, f.duplicate ? "cron tick already fired" : "cron tick fired",
            {{"job", f.job},
             {"tick", static_cast<long long>(f.tick)},
             {"task_id", f.task_id},
             {"ns", f.ns},
             {"type", f.task_type},
             {"catch_up", f.catch_up}});
      }
      for (const auto& [job, first] : r.missed) {
        Log(warn, "cron ticks missed while no scheduler ran",
            {{"job", job}, {"first_missed", static_cast<long long>(first)}});
      }
      for (const auto& [job, why] : r.invalid) {
        Log(err, "cron job definition invalid, skipped", {{"job", job}, {"error", why}});
      }
      for (const auto& [job, why] : r.refused) {
        Log(err, "cron tick refused by enqueue", {{"job", job}, {"error", why}});
      }
    };
    co.on_error = [](const Status& st) {
      Log(warn, "cron pass failed, retrying", {{"error", st.ToString()}});
    };
    cron_ = std::make_unique<internal::CronTicker>(co);
    if (Status st = cron_->Start(); !st.ok()) return st;
  }
  running_ = true;
  return Status::Ok();
}

void Daemon::StopComponents() {
  running_ = false;
  if (cron_) cron_->Stop();
  if (promoter_) {
    promoted_seen_ += promoter_->promoted_total();
    promoter_->Stop();
  }
  cron_.reset();
  promoter_.reset();
  reaper_.reset();
}

bool Daemon::ReapOnce() {
  if (!reaper_) return true;
  StatusOr<internal::ReapResult> pass = internal::ReapResult{};
  if (config_.namespaces.empty()) {
    pass = reaper_->RunPass();
  } else {
    for (const TypeRef& t : served_) {
      auto one = reaper_->RunOnce(t.ns, t.type);
      if (!one.ok()) {
        pass = one.status();
        break;
      }
      pass->reclaimed += one->reclaimed;
      pass->retried += one->retried;
      pass->dead += one->dead;
    }
  }
  if (!pass.ok()) {
    // Logged once per outage, not once per retry.
    if (reaper_ok_)
      Log(warn, "reaper pass failed, retrying", {{"error", pass.status().ToString()}});
    reaper_ok_ = false;
    return false;
  }
  if (!reaper_ok_) Log(info, "reaper recovered");
  reaper_ok_ = true;
  if (pass->reclaimed > 0) {
    reclaimed_total_ += static_cast<std::uint64_t>(pass->reclaimed);
    reclaim_retried_total_ += static_cast<std::uint64_t>(pass->retried);
    reclaim_dead_total_ += static_cast<std::uint64_t>(pass->dead);
    Log(info, "leases expired, tasks taken back",
        {{"reclaimed", static_cast<long long>(pass->reclaimed)},
         {"retry", static_cast<long long>(pass->retried)},
         {"dead", static_cast<long long>(pass->dead)}});
  }
  return true;
}

void Daemon::LogStats(bool force) {
  std::uint64_t promoted = promoted_total_.load();
  std::uint64_t reclaimed = reclaimed_total_.load();
  std::uint64_t cron = cron_ ? cron_->fired_total() : 0;
  if (!force && promoted == logged_promoted_ && reclaimed == logged_reclaimed_ &&
      cron == logged_cron_) {
    return;
  }
  logged_promoted_ = promoted;
  logged_reclaimed_ = reclaimed;
  logged_cron_ = cron;
  Log(info, "stats",
      {{"promoted_total", static_cast<unsigned long long>(promoted)},
       {"reclaimed_total", static_cast<unsigned long long>(reclaimed)},
       {"reclaim_retry_total", static_cast<unsigned long long>(reclaim_retried_total_.load())},
       {"reclaim_dead_total", static_cast<unsigned long long>(reclaim_dead_total_.load())},
       {"cron_fired_total", static_cast<unsigned long long>(cron)}});
}

Status Daemon::Run() {
  Log(info, "batond starting",
      {{"instance", config_.instance},
       {"redis", config_.redis_url.find('@') == std::string::npos ? config_.redis_url
                                                                  : "(with credentials)"},
       {"namespaces", config_.namespaces.empty() ? "all" : Join(config_.namespaces)},
       {"lease_ms", static_cast<long long>(config_.lease.count())},
       {"promote_batch", config_.promote_batch},
       {"reaper_interval_ms", static_cast<long long>(config_.reaper_interval.count())},
       {"cron", config_.cron},
       {"health", config_.health.empty() ? "off" : config_.health}});
  if (!config_.health.empty()) {
    HealthServerOptions ho;
    if (Status st = ParseListenAddress(config_.health, &ho.host, &ho.port); !st.ok()) return st;
    ho.redis_url = config_.redis_url;
    ho.details = [this] { return HealthDetails(); };
    auto health = HealthServer::Start(std::move(ho));
    if (!health.ok()) return health.status();
    health_ = std::move(*health);
    Log(info, "health endpoint listening",
        {{"address", config_.health}, {"port", health_->port()}, {"path", "/healthz"}});
  }

  Status prepared = PrepareRedis();
  if (prepared.code() == StatusCode::kCancelled) return Status::Ok();
  if (!prepared.ok()) return prepared;

  // Components whose Start() fails (Redis went away again) are retried with backoff.
  internal::Backoff backoff(std::chrono::milliseconds(200), std::chrono::milliseconds(5000));
  while (true) {
    Status st = StartComponents();
    if (st.ok()) break;
    StopComponents();
    if (st.code() != StatusCode::kUnavailable) return st;
    auto wait = backoff.Next();
    Log(warn, "start failed, retrying",
        {{"error", st.ToString()}, {"retry_in_ms", static_cast<long long>(wait.count())}});
    if (WaitForStop(wait)) return Status::Ok();
  }
  Log(info, "batond running", {{"instance", config_.instance}});

  auto now = std::chrono::steady_clock::now();
  auto next_discovery = now + config_.discovery_interval;
  auto next_stats = now + kStatsInterval;
  internal::Backoff reap_backoff(config_.reaper_interval, std::chrono::milliseconds(5000));
  while (true) {
    std::chrono::milliseconds wait = config_.reaper_interval;
    if (ReapOnce()) {
      reap_backoff.Reset();
    } else {
      wait = reap_backoff.Next();
    }
    promoted_total_ = promoted_seen_.load() + (promoter_ ? promoter_->promoted_total() : 0);
    now = std::chrono::steady_clock::now();
    if (now >= next_discovery) {
      RefreshServedTypes();
      next_discovery = now + config_.discovery_interval;
    }
    if (now >= next_stats) {
      LogStats(false);
      next_stats = now + kStatsInterval;
    }
    if (WaitForStop(wait)) break;
  }
  Log(info, "batond stopping", {{"instance", config_.instance}});
  StopComponents();
  promoted_total_ = promoted_seen_.load();
  LogStats(true);
  if (health_) health_->Stop();
  Log(info, "batond stopped", {{"instance", config_.instance}});
  return Status::Ok();
}

}  // namespace baton::batond
