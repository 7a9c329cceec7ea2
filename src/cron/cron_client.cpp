// baton::CronClient: CronJobSpec <-> the JSON of baton:cron (CronJob), on top of CronStore.
#include <utility>

#include "baton/cron.h"
#include "broker/redis_connection.h"
#include "broker/redis_open.h"
#include "cron/cron_job.h"
#include "cron/cron_store.h"

namespace baton {
namespace {

// How many times SetEnabled re-reads a definition that changed between its read and its write.
constexpr int kSetEnabledAttempts = 5;

std::string DefinitionJson(const CronJobSpec& spec) { return internal::CronJob{spec}.ToJson(); }

Status NoSuchJob(const std::string& name) { return Status::NotFound("no cron job named " + name); }

// The stored text of `name` parsed; the error says that it is the stored definition that is bad.
StatusOr<internal::CronJob> ParseStored(const std::string& name, const std::string& json) {
  auto job = internal::CronJob::FromJson(name, json);
  if (!job.ok()) {
    return Status(job.status().code(),
                  "stored definition of " + name + " is invalid: " + job.status().message());
  }
  return job;
}

}  // namespace

struct CronClient::Impl {
  std::unique_ptr<internal::RedisConnection> connection;

  // A broken connection is reopened before the next operation.
  StatusOr<internal::CronStore> Store() {
    if (connection->broken()) {
      if (Status s = connection->Reconnect(); !s.ok()) return s;
    }
    return internal::CronStore(*connection);
  }

  Status SetEnabledOnce(const std::string& name, bool enabled, bool* done);
};

CronClient::CronClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CronClient::~CronClient() = default;

StatusOr<std::unique_ptr<CronClient>> CronClient::Connect(const CronClientOptions& options) {
  auto connection = internal::OpenRedis(options.redis);
  if (!connection.ok()) return connection.status().WithContext("cron connect");
  auto impl = std::make_unique<Impl>();
  impl->connection = std::move(connection).value();
  return std::unique_ptr<CronClient>(new CronClient(std::move(impl)));
}

Status CronClient::Put(const CronJobSpec& job) {
  if (Status s = job.Validate(); !s.ok()) return s.WithContext("cron put");
  auto store = impl_->Store();
  if (!store.ok()) return store.status().WithContext("cron put");
  return store->Put(job.name, DefinitionJson(job)).WithContext("cron put");
}

Status CronClient::Add(const CronJobSpec& job) {
  if (Status s = job.Validate(); !s.ok()) return s.WithContext("cron add");
  auto store = impl_->Store();
  if (!store.ok()) return store.status().WithContext("cron add");
  auto added = store->Add(job.name, DefinitionJson(job));
  if (!added.ok()) return added.status().WithContext("cron add");
  if (!*added) {
    return Status(StatusCode::kAlreadyExists, "cron job " + job.name + " already exists")
        .WithContext("cron add");
  }
  return Status::Ok();
}

StatusOr<std::optional<CronJobSpec>> CronClient::Get(const std::string& name) {
  auto store = impl_->Store();
  if (!store.ok()) return store.status().WithContext("cron get");
  auto json = store->Get(name);
  if (!json.ok()) return json.status().WithContext("cron get");
  if (!json->has_value()) return std::optional<CronJobSpec>();
  auto job = ParseStored(name, **json);
  if (!job.ok()) return job.status().WithContext("cron get");
  return std::optional<CronJobSpec>(std::move(*job));
}

StatusOr<CronJobList> CronClient::List() {
  auto store = impl_->Store();
  if (!store.ok()) return store.status().WithContext("cron list");
  auto stored = store->List();
  if (!stored.ok()) return stored.status().WithContext("cron list");
  CronJobList list;
  for (auto& [name, json] : *stored) {
    auto job = internal::CronJob::FromJson(name, json);
    if (job.ok()) {
      list.jobs.push_back(std::move(*job));
    } else {
      list.unreadable.push_back({name, std::move(json), job.status().message()});
    }
  }
  return list;
}

Status CronClient::Remove(const std::string& name) {
  auto store = impl_->Store();
  if (!store.ok()) return store.status().WithContext("cron remove");
  return store->Remove(name).WithContext("cron remove");
}

Status CronClient::Impl::SetEnabledOnce(const std::string& name, bool enabled, bool* done) {
  auto store = Store();
  if (!store.ok()) return store.status();
  auto json = store->Get(name);
  if (!json.ok()) return json.status();
  if (!json->has_value()) return NoSuchJob(name);
  auto job = ParseStored(name, **json);
  if (!job.ok()) return job.status();
  if (job->enabled == enabled) {
    *done = true;  // nothing to write
    return Status::Ok();
  }
  job->enabled = enabled;
  auto replaced = store->Replace(name, **json, job->ToJson());
  if (!replaced.ok()) return replaced.status();
  *done = *replaced;
  return Status::Ok();
}

Status CronClient::SetEnabled(const std::string& name, bool enabled) {
  for (int attempt = 0; attempt < kSetEnabledAttempts; ++attempt) {
    bool done = false;
    if (Status s = impl_->SetEnabledOnce(name, enabled, &done); !s.ok()) {
      return s.WithContext("cron set_enabled");
    }
    if (done) return Status::Ok();
  }
  return Status::Conflict("cron set_enabled: the definition of " + name + " changed during " +
                          std::to_string(kSetEnabledAttempts) + " attempts; try again");
}

}  // namespace baton
