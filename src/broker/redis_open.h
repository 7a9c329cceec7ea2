#pragma once
// Opening a connection from RedisOptions (URL and timeout), and keeping a long-lived one usable:
// the two steps every component (client, worker, inspector, background loops) repeats.
#include <memory>

#include "baton/redis_options.h"
#include "baton/status.h"
#include "broker/redis_connection.h"

namespace baton::internal {

// Parses options.url (docs: include/baton/redis_options.h) and connects with options.timeout.
StatusOr<std::unique_ptr<RedisConnection>> OpenRedis(const RedisOptions& options);

// Leaves `conn` connected: opens it from `options` when null, reconnects it when broken, else
// nothing.
Status EnsureConnected(std::unique_ptr<RedisConnection>& conn, const RedisOptions& options);

}  // namespace baton::internal
