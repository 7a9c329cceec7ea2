#pragma once
// One synchronous hiredis connection to one Redis server, with pipelining: what RedisConnection
// uses for a single Redis, and for each node of a cluster. Not thread-safe.
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "baton/status.h"
#include "broker/redis_endpoint.h"
#include "broker/redis_reply.h"
#include "broker/reply_guard.h"

struct redisContext;

namespace baton::internal {

// The calls behave as RedisConnection's of the same name describe (redis_connection.h), on this
// one server: Open() connects, then AUTH, SELECT and PING.
class RedisNode {
 public:
  static StatusOr<std::unique_ptr<RedisNode>> Open(
      const RedisEndpoint& endpoint,
      std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  ~RedisNode();
  RedisNode(const RedisNode&) = delete;
  RedisNode& operator=(const RedisNode&) = delete;

  StatusOr<Reply> Command(const std::vector<std::string>& argv);
  StatusOr<Reply> BlockingCommand(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout);
  void Append(const std::vector<std::string>& argv);
  StatusOr<std::vector<Reply>> Flush(
      std::chrono::milliseconds block = std::chrono::milliseconds(0));
  size_t pending() const { return pending_; }
  Status Reconnect();
  bool broken() const;
  const RedisEndpoint& endpoint() const { return endpoint_; }

  // Writes the Append()ed commands to the socket without waiting for their replies, so that a
  // pipeline split over several nodes runs on all of them at once; Flush() then reads the
  // replies. Errors: kUnavailable, the connection is broken.
  Status Send();

 private:
  RedisNode(RedisEndpoint endpoint, std::chrono::milliseconds timeout);
  Status Connect();
  StatusOr<Reply> ReadReply();
  Status BrokenStatus() const;

  RedisEndpoint endpoint_;
  std::chrono::milliseconds timeout_;
  redisContext* ctx_ = nullptr;
  size_t pending_ = 0;
  ReplyGuard guard_;        // the context's reader refuses oversized arrays
  std::string last_error_;  // why the connection broke, for the kUnavailable messages
};

}  // namespace baton::internal
