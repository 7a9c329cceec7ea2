#pragma once
// The cron job definitions in the Redis hash baton:cron (name -> JSON, docs/cron.md). Every change
// is followed by PUBLISH baton:cron:changed <name>, so running tickers (batond) reload at once.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "baton/status.h"
#include "broker/redis_connection.h"

namespace baton::cli {

class CronStore {
 public:
  explicit CronStore(std::unique_ptr<internal::RedisConnection> conn) : conn_(std::move(conn)) {}

  // The stored JSON of `name`; nullopt when there is no such job.
  StatusOr<std::optional<std::string>> Get(const std::string& name);
  // Every (name, JSON), sorted by name.
  StatusOr<std::vector<std::pair<std::string, std::string>>> List();
  // Writes the definition (replacing any) and announces the change.
  Status Put(const std::string& name, const std::string& json);
  // Removes the job and announces the change. kNotFound when there is no such job.
  Status Remove(const std::string& name);

 private:
  Status Announce(const std::string& name);
  std::unique_ptr<internal::RedisConnection> conn_;
};

}  // namespace baton::cli
