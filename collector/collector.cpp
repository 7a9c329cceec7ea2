#include "collector.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "api_server.h"
#include "broker/redis_connection.h"
#include "event_decode.h"
#include "event_reader.h"
#include "queue_sampler.h"
#include "retention.h"
#include "store_schema.h"
#include "store_writer.h"

namespace baton::collector {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string DefaultName() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  return std::string("collector:") + host + ":" + std::to_string(getpid());
}

// Opens the store until it works or the collector stops.
std::unique_ptr<SqlDatabase> OpenStoreRetrying(const std::string& url,
                                               const std::function<bool()>& wait) {
  for (;;) {
    auto db = OpenSqlDatabase(url);
    if (db.ok()) return std::move(db).value();
    spdlog::warn("store unavailable, retrying: {}", db.status().message());
    if (!wait()) return nullptr;
  }
}

}  // namespace

Collector::Collector(CollectorConfig config) : config_(std::move(config)) {
  if (config_.name.empty()) config_.name = DefaultName();
}

Collector::~Collector() { RequestStop(); }

void Collector::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
}

bool Collector::WaitFor(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !wake_.wait_for(lock, d, [this] { return stop_.load(); });
}

Status Collector::Run() {
  auto opened = OpenSqlDatabase(config_.store);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<SqlDatabase> db = std::move(opened).value();
  if (Status s = MigrateStore(*db); !s.ok()) return s;

  ApiServer api(config_.store, stats_);
  if (!config_.listen.empty()) {
    if (Status s = api.Start(config_.listen); !s.ok()) return s;
    http_port_ = api.port();
    spdlog::info("HTTP API and /metrics on http://{}:{}",
                 config_.listen.substr(0, config_.listen.rfind(':')), api.port());
  }
  std::thread sampler;
  if (config_.sample_interval.count() > 0) sampler = std::thread([this] { SampleLoop(); });

  auto endpoint = internal::RedisEndpoint::FromOptions(config_.redis);
  if (!endpoint.ok()) {
    RequestStop();
    if (sampler.joinable()) sampler.join();
    return endpoint.status();
  }
  const auto retry_wait = [this] { return WaitFor(std::chrono::seconds(1)); };
  std::unique_ptr<internal::RedisConnection> conn;
  std::unique_ptr<EventReader> reader;
  bool own_pending = true;  // entries this consumer name may hold (from a previous process)
  Clock::time_point next_discovery{}, next_scan{}, next_claim{}, next_progress{}, next_retention{};
  spdlog::info("collector {} reading events into {}", config_.name,
               config_.store.rfind("postgres", 0) == 0 ? "PostgreSQL" : "SQLite");

  // Stores one read: decodes the entries (rejects kept aside), copies failure details, writes
  // the batch, and acks only after the commit.
  auto process = [&](const std::vector<EventBatch>& batches) -> Status {
    std::vector<EventRow> rows;
    for (const auto& batch : batches) {
      for (const auto& entry : batch.entries) {
        StatusOr<std::vector<EventRow>> decoded =
            entry.fields.empty()
                ? StatusOr<std::vector<EventRow>>(Status::InvalidArgument(
                      "entry", "was trimmed from the stream while a collector that died held it"))
                : DecodeEventEntry(batch.ns, entry.id, entry.fields);
        if (decoded.ok()) {
          for (auto& r : *decoded) rows.push_back(std::move(r));
          continue;
        }
        nlohmann::json fields = nlohmann::json::object();
        for (const auto& [k, v] : entry.fields) fields[k] = v;
        ++stats_.entries_rejected;
        spdlog::warn("events entry {} of namespace {} rejected: {}", entry.id, batch.ns,
                     decoded.status().message());
        if (Status s = StoreWriter(*db).RecordRejected(
                batch.ns, entry.id, decoded.status().message(),
                fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), NowMs());
            !s.ok()) {
          return s;
        }
      }
    }
    if (Status s = reader->AddFailureDetails(rows); !s.ok()) return s;
    const auto started = Clock::now();
    auto result = StoreWriter(*db).Ingest(rows);
    if (!result.ok()) {
      ++stats_.store_errors;
      spdlog::warn("store write failed (the entries stay unacked and are written again): {}",
                   result.status().message());
      return result.status();
    }
    stats_.ingest_micros +=
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started).count();
    stats_.events_stored += result->inserted;
    stats_.events_duplicate += result->duplicates;
    ++stats_.batches;
    return reader->Ack(batches);
  };

  while (!stop_) {
    if (!conn || conn->broken()) {
      reader.reset();
      auto c = internal::RedisConnection::Open(*endpoint);
      if (!c.ok()) {
        ++stats_.redis_errors;
        stats_.redis_up = false;
        spdlog::warn("Redis unavailable, retrying: {}", c.status().message());
        if (!retry_wait()) break;
        continue;
      }
      conn = std::move(c).value();
      stats_.redis_up = true;
      reader = std::make_unique<EventReader>(
          *conn, EventReaderOptions{"baton-collector", config_.name, config_.batch, config_.block,
                                    config_.claim_idle});
      next_discovery = next_scan = Clock::time_point{};
      own_pending = true;
    }
    if (db == nullptr) {
      db = OpenStoreRetrying(config_.store, retry_wait);
      if (!db) break;
    }
    const auto now = Clock::now();
    Status step = Status::Ok();
    if (now >= next_discovery) {
      const bool scan = now >= next_scan;
      auto found = reader->DiscoverNamespaces(scan);
      step = found.ok() ? reader->Follow(*found) : found.status();
      if (step.ok()) {
        std::lock_guard<std::mutex> lock(namespaces_mu_);
        namespaces_ = reader->namespaces();
      }
      next_discovery = now + config_.discovery_interval;
      if (scan) next_scan = now + config_.scan_interval;
    }
    if (step.ok() && own_pending) {
      auto pending = reader->ReadOwnPending();
      step =
          pending.ok() ? (pending->empty() ? Status::Ok() : process(*pending)) : pending.status();
      if (step.ok() && pending.ok()) own_pending = !pending->empty();
    }
    if (step.ok() && now >= next_claim) {
      auto claimed = reader->ClaimAbandoned();
      step =
          claimed.ok() ? (claimed->empty() ? Status::Ok() : process(*claimed)) : claimed.status();
      if (claimed.ok() && !claimed->empty()) {
        spdlog::info("took over {} stream(s) of unacked events from a stopped collector",
                     claimed->size());
      }
      next_claim = now + std::max(std::chrono::milliseconds(100), config_.claim_idle / 4);
    }
    if (step.ok() && !own_pending) {
      auto fresh = reader->ReadNew();
      step = fresh.ok() ? (fresh->empty() ? Status::Ok() : process(*fresh)) : fresh.status();
    }
    if (step.ok() && Clock::now() >= next_progress) {
      for (const auto& ns : reader->namespaces()) {
        auto progress = reader->Progress(ns);
        if (!progress.ok()) {
          step = progress.status();
          break;
        }
        auto known = StoreWriter(*db).LostTotal(ns);
        if (!known.ok()) {
          step = known.status();
          break;
        }
        std::int64_t lost = *known;
        if (progress->known && progress->lost_total > lost) {
          spdlog::warn(
              "namespace {}: {} events were trimmed from its events stream before a "
              "collector read them (stats are incomplete)",
              ns, progress->lost_total - lost);
          if (Status s = StoreWriter(*db).RecordGap(ns, NowMs(), progress->lost_total,
                                                    progress->last_delivered_id);
              !s.ok()) {
            step = s;
            break;
          }
          lost = progress->lost_total;
        }
        stats_.SetLag(ns, {progress->known ? progress->behind
                                           : std::max<std::int64_t>(0, progress->behind - lost),
                           lost});
      }
      next_progress = Clock::now() + std::chrono::seconds(2);
    }
    if (step.ok() && Clock::now() >= next_retention) {
      auto swept = ApplyRetention(*db, config_.retention, NowMs());
      if (!swept.ok()) {
        step = swept.status();
      } else if (swept->events_deleted || swept->minute_rows_deleted) {
        spdlog::info("retention: deleted {} events, {} minute rollups", swept->events_deleted,
                     swept->minute_rows_deleted);
      }
      next_retention = Clock::now() + std::chrono::minutes(1);
    }
    if (!step.ok()) {
      if (step.code() == StatusCode::kUnavailable && conn->broken()) {
        stats_.redis_up = false;
        ++stats_.redis_errors;
        spdlog::warn("Redis connection lost, reconnecting: {}", step.message());
      } else if (step.code() == StatusCode::kUnavailable) {
        db.reset();  // a PostgreSQL connection that broke: open a new one
      } else {
        spdlog::warn("collector step failed, retrying: {}", step.message());
      }
      own_pending = true;  // what was read and not acked is read again
      if (!retry_wait()) break;
    }
  }
  RequestStop();
  if (sampler.joinable()) sampler.join();
  api.Stop();
  spdlog::info("collector stopped");
  return Status::Ok();
}

void Collector::SampleLoop() {
  InspectorOptions options;
  options.redis = config_.redis;
  // The per-minute rates ListQueues measures are not stored (the events give exact ones): read
  // one event for them, not 20,000. Bound the delayed/retrying split too.
  options.event_scan_limit = 1;
  options.scheduled_scan_limit = 10000;
  std::unique_ptr<Inspector> inspector;
  std::unique_ptr<SqlDatabase> db;
  const auto interval = config_.sample_interval.count();
  while (!stop_) {
    // Sample on the ticks of the interval, so that collectors sharing a store write one row.
    const std::int64_t now = NowMs();
    const std::int64_t next_tick = (now / interval + 1) * interval;
    if (!WaitFor(std::chrono::milliseconds(next_tick - now))) break;
    std::set<std::string> namespaces;
    {
      std::lock_guard<std::mutex> lock(namespaces_mu_);
      namespaces = namespaces_;
    }
    if (namespaces.empty()) continue;
    if (!inspector) {
      auto connected = Inspector::Connect(options);
      if (!connected.ok()) {
        spdlog::warn("sampler: Redis unavailable: {}", connected.status().message());
        continue;
      }
      inspector = std::move(connected).value();
    }
    if (!db) {
      auto opened = OpenSqlDatabase(config_.store);
      if (!opened.ok()) {
        spdlog::warn("sampler: store unavailable: {}", opened.status().message());
        continue;
      }
      db = std::move(opened).value();
    }
    auto sample = SampleQueues(*inspector, namespaces, next_tick, NowMs());
    if (!sample.ok()) {
      spdlog::warn("sampler: {}", sample.status().message());
      if (sample.status().code() == StatusCode::kUnavailable) inspector.reset();
      continue;
    }
    Status written = StoreWriter(*db).WriteSamples(sample->queues, sample->consumers);
    if (!written.ok()) {
      spdlog::warn("sampler: store write failed: {}", written.message());
      if (written.code() == StatusCode::kUnavailable) db.reset();
      continue;
    }
    ++stats_.samples;
  }
}

}  // namespace baton::collector
