#include "broker/redis_open.h"

namespace baton::internal {

StatusOr<std::unique_ptr<RedisConnection>> OpenRedis(const RedisOptions& options) {
  StatusOr<RedisEndpoint> endpoint = RedisEndpoint::FromOptions(options);
  if (!endpoint.ok()) return endpoint.status();
  return RedisConnection::Open(*endpoint);
}

Status EnsureConnected(std::unique_ptr<RedisConnection>& conn, const RedisOptions& options) {
  if (conn && !conn->broken()) return Status::Ok();
  if (conn) return conn->Reconnect();
  StatusOr<std::unique_ptr<RedisConnection>> opened = OpenRedis(options);
  if (!opened.ok()) return opened.status();
  conn = std::move(*opened);
  return Status::Ok();
}

}  // namespace baton::internal
