#pragma once
// The cron job definitions in the Redis hash baton:cron (name -> JSON text, docs/cron.md), as
// stored: this layer neither parses nor validates (CronClient does). Every change is followed by
// PUBLISH baton:cron:changed <name> in the same round trip, so running tickers (batond) reload at
// once.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "baton/status.h"
#include "broker/redis_connection.h"

namespace baton::internal {

class CronStore {
 public:
  // Uses `conn` (not owned) for every call; it must outlive the store.
  explicit CronStore(RedisConnection& conn) : conn_(conn) {}

  // The stored JSON of `name`; nullopt when there is no such job.
  StatusOr<std::optional<std::string>> Get(const std::string& name);
  // Every (name, JSON), sorted by name.
  StatusOr<std::vector<std::pair<std::string, std::string>>> List();
  // Writes the definition, replacing any, and announces the change.
  Status Put(const std::string& name, const std::string& json);
  // Writes the definition only when there is no job of that name (HSETNX) and announces it.
  // false when one exists: nothing written.
  StatusOr<bool> Add(const std::string& name, const std::string& json);
  // Compare-and-set: writes `json` (and announces it) only while the stored definition is still
  // exactly `expected` (WATCH, then MULTI/EXEC). false when it differs, is gone, or changed before
  // EXEC: nothing written.
  StatusOr<bool> Replace(const std::string& name, const std::string& expected,
                         const std::string& json);
  // Removes the job and announces the change. kNotFound "no cron job named NAME" when there is
  // none.
  Status Remove(const std::string& name);

 private:
  RedisConnection& conn_;
};

}  // namespace baton::internal
