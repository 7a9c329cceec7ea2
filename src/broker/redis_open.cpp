#include "broker/redis_open.h"

namespace baton::internal {

StatusOr<std::unique_ptr<RedisConnection>> OpenRedis(std::string_view url) {
  StatusOr<RedisEndpoint> endpoint = RedisEndpoint::Parse(url);
  if (!endpoint.ok()) return endpoint.status();
  return RedisConnection::Open(*endpoint);
}

Status EnsureConnected(std::unique_ptr<RedisConnection>& conn, std::string_view url) {
  if (conn && !conn->broken()) return Status::Ok();
  if (conn) return conn->Reconnect();
  StatusOr<std::unique_ptr<RedisConnection>> opened = OpenRedis(url);
  if (!opened.ok()) return opened.status();
  conn = std::move(*opened);
  return Status::Ok();
}

}  // namespace baton::internal
