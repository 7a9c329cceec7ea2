#pragma once
// Opening a connection from a Redis URL, and keeping a long-lived one usable: the two steps every
// background loop (promoter, reaper, cron ticker) repeats before each pass.
#include <memory>
#include <string_view>

#include "baton/status.h"
#include "broker/redis_connection.h"

namespace baton::internal {

// Parses `url` (redis://[user:password@]host:port[/db] or unix:///path) and connects.
StatusOr<std::unique_ptr<RedisConnection>> OpenRedis(std::string_view url);

// Leaves `conn` connected: opens it from `url` when null, reconnects it when broken, else nothing.
Status EnsureConnected(std::unique_ptr<RedisConnection>& conn, std::string_view url);

}  // namespace baton::internal
