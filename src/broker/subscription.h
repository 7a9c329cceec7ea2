#pragma once
// A connection in subscribe mode (SUBSCRIBE, RESP2 push messages), for the listeners of Baton's
// channels (batond's wake-up and new-type subscriber, the cron ticker's baton:cron:changed).
// RedisConnection only speaks request/reply, so a subscription has its own hiredis connection.
// Not thread-safe: one thread owns it.
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "baton/status.h"
#include "broker/redis_endpoint.h"
#include "broker/reply_guard.h"

struct redisContext;

namespace baton::internal {

struct PubSubMessage {
  std::string channel;
  std::string payload;
};

class Subscription {
 public:
  // Connects (AUTH when the endpoint has a password; TCP keepalive, since a subscriber only reads
  // and must notice a peer that vanished), SUBSCRIBEs to `channels` and waits for every
  // confirmation, so a message published after Open() returned is received. On a cluster, the
  // first seed that answers (a cluster sends every message to every node). Errors: kUnavailable
  // ("subscribe: connect: ...", "subscribe: AUTH: ...", "subscribe: SUBSCRIBE: ...").
  static StatusOr<std::unique_ptr<Subscription>> Open(const RedisEndpoint& endpoint,
                                                      const std::vector<std::string>& channels);
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  // The socket, to poll() together with other descriptors.
  int fd() const;
  // The messages that arrived: what is already buffered, plus what the socket has when it is
  // readable (call it when poll() says so; it does not block). kUnavailable when the connection
  // broke: the Subscription is then useless, Open() a new one.
  StatusOr<std::vector<PubSubMessage>> ReadAvailable();
  // Waits up to `timeout` for messages; an empty vector when none came. kUnavailable as above.
  StatusOr<std::vector<PubSubMessage>> Wait(std::chrono::milliseconds timeout);

 private:
  Subscription(redisContext* ctx, std::unique_ptr<ReplyGuard> guard)
      : ctx_(ctx), guard_(std::move(guard)) {}
  static StatusOr<std::unique_ptr<Subscription>> OpenOne(const RedisEndpoint& endpoint,
                                                         const std::vector<std::string>& channels);
  // Moves the complete replies already read into `out`. False on a protocol error.
  bool TakeBuffered(std::vector<PubSubMessage>* out);

  redisContext* ctx_;
  std::unique_ptr<ReplyGuard> guard_;  // ctx_'s reader refuses oversized arrays; outlives ctx_
};

}  // namespace baton::internal
