#include "daemon.h"

#include <algorithm>

#include "broker/function_library.h"
#include "core/backoff.h"
#include "log.h"

namespace baton::batond {

using internal::TypeRef;
using spdlog::level::debug;
using spdlog::level::err;
using spdlog::level::info;
using spdlog::level::warn;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::chrono::seconds kStatsInterval{60};
// How often Run()'s loop checks that the functions library is still loaded (one FCALL_RO).
constexpr std::chrono::seconds kLibraryCheckInterval{5};
// The promoter's safety pass: it sleeps until the next due time or a wake-up message, and checks
// every type at least this often anyway.
constexpr std::chrono::seconds kPromoterSafetyInterval{30};

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

spdlog::level::level_enum SpdLevel(internal::LogLevel level) {
  switch (level) {
    case internal::LogLevel::kDebug:
      return debug;
    case internal::LogLevel::kInfo:
      return info;
    case internal::LogLevel::kWarn:
      return warn;
    case internal::LogLevel::kError:
      return err;
  }
  return info;
}

}  // namespace

internal::LogFn DaemonLogFn() {
  return [](internal::LogLevel level, std::string_view msg,
            const std::vector<internal::LogAttr>& attrs) {
    std::vector<LogField> fields;
    fields.reserve(attrs.size());
    for (const internal::LogAttr& a : attrs) {
      fields.push_back(LogField{a.key, LogValue(a.value, a.number)});
    }
    Log(SpdLevel(level), msg, fields);
  };
}

Daemon::Daemon(DaemonConfig config) : config_(std::move(config)), log_(DaemonLogFn()) {}

Daemon::~Daemon() {
  StopComponents();
  if (health_) health_->Stop();
}

void Daemon::RequestStop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  stop_requested_ = true;
  stop_cv_.notify_all();
}

void Daemon::PokeRun(bool resync) {
  std::lock_guard<std::mutex> lock(stop_mu_);
  poked_ = true;
  resync_ = resync_ || resync;
  stop_cv_.notify_all();
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
          {"served_types", served_types_.load()},
          {"promoted_total", promoted_total_.load()},
          {"reclaimed_total", reclaimed_total_.load()}};
}

Status Daemon::PrepareRedis() {
  auto endpoint = internal::RedisEndpoint::FromOptions(config_.redis);
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
    std::unique_lock<std::mutex> lock(stop_mu_);
    if (stop_cv_.wait_for(lock, wait, [this] { return stop_requested_; })) {
      return Status(StatusCode::kCancelled, "stop requested");
    }
  }
}

Status Daemon::EnsureConn() {
  if (conn_ && !conn_->broken()) return Status::Ok();
  auto endpoint = internal::RedisEndpoint::FromOptions(config_.redis);
  if (!endpoint.ok()) return endpoint.status();
  auto conn = internal::RedisConnection::Open(*endpoint);
  if (!conn.ok()) return conn.status();
  conn_ = std::move(*conn);
  return Status::Ok();
}

void Daemon::LogAdded(const std::vector<TypeRef>& added, const char* how) {
  if (added.empty()) return;
  Log(info, "serving new task types",
      {{"types", TypesText(added)},
       {"found_by", how},
       {"served_types", static_cast<unsigned long long>(directory_->Snapshot().size())}});
}

Status Daemon::Discover(bool scan) {
  if (Status st = EnsureConn(); !st.ok()) return st;
  auto added = directory_->Refresh(*conn_, scan);
  if (!added.ok() && scan && added.status().code() != StatusCode::kUnavailable) {
    // An ACL user may not be allowed to SCAN: serve what the directory and the messages say.
    if (!scan_refused_) {
      Log(warn, "namespace scan failed; serving registered namespaces and announced types only",
          {{"error", added.status().ToString()}});
    }
    scan_refused_ = true;
    added = directory_->Refresh(*conn_, false);
  }
  if (!added.ok()) return added.status();
  LogAdded(*added, scan ? "scan" : "directory");
  if (!added->empty()) promoter_->Poke();
  return Status::Ok();
}

Status Daemon::SyncNewNamespaces() {
  if (!directory_->HasNewNamespaces()) return Status::Ok();
  if (Status st = EnsureConn(); !st.ok()) return st;
  auto added = directory_->SyncNewNamespaces(*conn_);
  if (!added.ok()) return added.status();
  LogAdded(*added, "namespace types");
  if (!added->empty()) promoter_->Poke();
  return Status::Ok();
}

void Daemon::CheckLibrary() {
  if (!EnsureConn().ok()) return;  // the components report the outage
  Status st = internal::CheckFunctionLibrary(*conn_);
  if (st.code() == StatusCode::kUnavailable) return;
  if (!st.ok() && config_.load_functions) {
    Status loaded = internal::LoadFunctionLibrary(*conn_);
    if (loaded.ok()) {
      Log(warn, "functions library was missing, loaded it again", {{"was", st.message()}});
      library_missing_ = false;
      return;
    }
    st = loaded;
  }
  if (!st.ok() && !library_missing_) {
    Log(err, "functions library missing: nothing is promoted or reclaimed until it is loaded",
        {{"error", st.message()},
         {"hint", "run `baton init` (or start batond with --load-functions)"}});
  } else if (st.ok() && library_missing_) {
    Log(info, "functions library is back");
  }
  library_missing_ = !st.ok();
}

Status Daemon::StartComponents() {
  auto endpoint = internal::RedisEndpoint::FromOptions(config_.redis);
  if (!endpoint.ok()) return endpoint.status();
  directory_ = std::make_unique<internal::TypeDirectory>(config_.namespaces);
  internal::TypeDirectory* directory = directory_.get();
  auto source = [directory] { return directory->Snapshot(); };

  internal::Promoter::Options po;
  po.redis = config_.redis;
  po.limit = config_.promote_batch;
  po.interval = kPromoterSafetyInterval;
  po.types_source = source;
  po.subscribe = false;  // fed by subscriber_ below
  po.log = log_;
  promoter_ = std::make_unique<internal::Promoter>(po);
  if (Status st = promoter_->Start(); !st.ok()) return st;

  internal::Reaper::Options ro;
  ro.redis = config_.redis;
  ro.count = config_.reclaim_batch;
  ro.interval = config_.reaper_interval;
  ro.name = config_.instance;
  ro.types_source = source;
  ro.default_retry.base = config_.retry_base;
  ro.default_retry.max = config_.retry_max;
  ro.log = log_;
  ro.on_reclaimed = [this](const TypeRef& type, const internal::ReapResult& r) {
    reclaimed_total_ += static_cast<std::uint64_t>(r.reclaimed);
    reclaim_retried_total_ += static_cast<std::uint64_t>(r.retried);
    reclaim_dead_total_ += static_cast<std::uint64_t>(r.dead);
    Log(info, "leases expired, tasks taken back",
        {{"ns", type.ns},
         {"type", type.type},
         {"reclaimed", static_cast<long long>(r.reclaimed)},
         {"retry", static_cast<long long>(r.retried)},
         {"dead", static_cast<long long>(r.dead)}});
  };
  reaper_ = std::make_unique<internal::Reaper>(ro);
  if (Status st = reaper_->Start(); !st.ok()) return st;

  // One subscription feeds the directory (new types) and the promoter (wake-ups). Subscribed
  // before the first discovery, so that nothing created in between is missed.
  internal::WakeupSubscriber::Handlers handlers;
  internal::Promoter* promoter = promoter_.get();
  handlers.on_type = [this, directory, promoter](const TypeRef& type) {
    if (!directory->Add(type)) return;
    Log(info, "serving new task types",
        {{"types", type.ns + "/" + type.type}, {"found_by", "message"}});
    promoter->Poke();
    if (directory->HasNewNamespaces()) PokeRun(false);
  };
  handlers.on_wakeup = [this, directory, promoter](const internal::WakeupMessage& msg) {
    if (!directory->Serves(msg.ns)) return;
    if (directory->Add({msg.ns, msg.type})) {
      Log(info, "serving new task types",
          {{"types", msg.ns + "/" + msg.type}, {"found_by", "message"}});
      if (directory->HasNewNamespaces()) PokeRun(false);
    }
    promoter->Notify(msg);
  };
  handlers.on_resubscribed = [this, promoter] {
    promoter->Resync();
    PokeRun(true);  // re-read the directory: announcements may have been missed
  };
  subscriber_ = std::make_unique<internal::WakeupSubscriber>(*endpoint, std::move(handlers), log_);
  (void)subscriber_->Start();  // a failure is logged by the subscriber, which keeps retrying

  if (config_.cron) {
    internal::CronTicker::Options co;
    co.redis = config_.redis;
    co.grace = config_.cron_grace;
    co.namespaces = config_.namespaces;
    co.log = log_;
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
    cron_ = std::make_unique<internal::CronTicker>(co);
    if (Status st = cron_->Start(); !st.ok()) return st;
  }
  running_ = true;
  return Status::Ok();
}

void Daemon::StopComponents() {
  running_ = false;
  if (subscriber_) subscriber_->Stop();  // first: its handlers use the promoter
  if (cron_) {
    cron_->Stop();
    cron_fired_by_stopped_ += cron_->fired_total();  // the ticker and its counter go below
  }
  if (promoter_) {
    promoter_->Stop();
    promoted_total_ = promoter_->promoted_total();  // after its last pass
  }
  if (reaper_) reaper_->Stop();
  subscriber_.reset();
  cron_.reset();
  promoter_.reset();
  reaper_.reset();
  directory_.reset();
}

void Daemon::LogStats(bool force) {
  std::uint64_t promoted = promoted_total_.load();
  std::uint64_t reclaimed = reclaimed_total_.load();
  // Includes what stopped tickers fired: the final line is logged after StopComponents().
  std::uint64_t cron = cron_fired_by_stopped_ + (cron_ ? cron_->fired_total() : 0);
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
       {"cron_fired_total", static_cast<unsigned long long>(cron)},
       {"served_types", static_cast<unsigned long long>(served_types_.load())}});
}

Status Daemon::Run() {
  Log(info, "batond starting",
      {{"instance", config_.instance},
       {"redis", config_.redis.url.find('@') == std::string::npos ? config_.redis.url
                                                                  : "(with credentials)"},
       {"namespaces", config_.namespaces.empty() ? "all" : Join(config_.namespaces)},
       {"promote_batch", config_.promote_batch},
       {"reaper_interval_ms", static_cast<long long>(config_.reaper_interval.count())},
       {"discovery_interval_ms", static_cast<long long>(config_.discovery_interval.count())},
       {"scan_interval_s", static_cast<long long>(config_.scan_interval.count())},
       {"cron", config_.cron},
       {"health", config_.health.empty() ? "off" : config_.health}});
  if (!config_.health.empty()) {
    HealthServerOptions ho;
    if (Status st = ParseListenAddress(config_.health, &ho.host, &ho.port); !st.ok()) return st;
    ho.redis = config_.redis;
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
    std::unique_lock<std::mutex> lock(stop_mu_);
    if (stop_cv_.wait_for(lock, wait, [this] { return stop_requested_; })) return Status::Ok();
  }

  // The first discovery (with a SCAN) runs at once; then the directory is re-read every
  // discovery interval, SCANned every scan interval, and whenever a message brought a namespace
  // to register or the subscription was lost.
  const bool scans = config_.namespaces.empty();
  auto now = Clock::now();
  auto next_refresh = now;
  auto next_scan = now;
  auto next_library = now + kLibraryCheckInterval;
  auto next_stats = now + kStatsInterval;
  internal::Backoff discovery_backoff(std::chrono::milliseconds(200),
                                      std::chrono::milliseconds(5000));
  bool announced = false;
  while (true) {
    bool resync = false;
    {
      std::unique_lock<std::mutex> lock(stop_mu_);
      auto until = std::min({next_refresh, next_library, next_stats});
      if (scans) until = std::min(until, next_scan);
      stop_cv_.wait_until(lock, until, [this] { return stop_requested_ || poked_; });
      if (stop_requested_) break;
      poked_ = false;
      resync = resync_;
      resync_ = false;
    }
    now = Clock::now();
    // After a lost subscription, announcements of new namespaces may have been missed: SCAN.
    const bool scan = scans && (resync || now >= next_scan);
    Status st = Status::Ok();
    if (resync || scan || now >= next_refresh) {
      st = Discover(scan);
      if (st.ok()) {
        next_refresh = now + config_.discovery_interval;
        if (scan) next_scan = now + config_.scan_interval;
      }
    }
    if (st.ok()) st = SyncNewNamespaces();
    if (st.ok()) {
      discovery_backoff.Reset();
      discovery_outage_.Succeeded(log_);
    } else {
      auto wait = discovery_backoff.Next();
      discovery_outage_.Failed(log_, st, wait);
      next_refresh = std::min(next_refresh, now + wait);
      if (conn_ && conn_->broken()) conn_.reset();
    }
    served_types_ = directory_->Snapshot().size();
    promoted_total_ = promoter_->promoted_total();
    if (!announced && st.ok()) {
      announced = true;
      Log(info, "batond running",
          {{"instance", config_.instance},
           {"served_types", static_cast<unsigned long long>(served_types_.load())}});
    }
    if (now >= next_library) {
      CheckLibrary();
      next_library = now + kLibraryCheckInterval;
    }
    if (now >= next_stats) {
      LogStats(false);
      next_stats = now + kStatsInterval;
    }
  }
  Log(info, "batond stopping", {{"instance", config_.instance}});
  StopComponents();
  LogStats(true);
  if (health_) health_->Stop();
  Log(info, "batond stopped", {{"instance", config_.instance}});
  return Status::Ok();
}

}  // namespace baton::batond
