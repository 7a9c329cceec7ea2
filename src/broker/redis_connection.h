#pragma once
// The connection every Baton component talks to Redis through: one RedisNode for a single Redis,
// or a ClusterConnection for a Redis Cluster (a redis+cluster:// URL), behind the same calls, so
// the state machine's users need not know which. Not thread-safe: one connection per thread.
// Every failure is a Status; a broken connection reports kUnavailable and Reconnect() opens a new
// one.
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "baton/redis_options.h"
#include "baton/status.h"
#include "broker/redis_endpoint.h"
#include "broker/redis_reply.h"

namespace baton::internal {

class ClusterConnection;
class RedisNode;

class RedisConnection {
 public:
  // Connects, then AUTH (when a password is set), SELECT (db != 0) and PING; on a cluster, reads
  // the slot map from the first seed that answers (nodes are connected on first use). `timeout`
  // (default: endpoint.timeout) bounds the connect and each command's reply, except
  // BlockingCommand. Errors: kUnavailable (cannot connect, NOAUTH, AUTH failed, timeout).
  static StatusOr<std::unique_ptr<RedisConnection>> Open(
      const RedisEndpoint& endpoint,
      std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends one command and waits for its reply. An error *reply* is returned as a Reply of type
  // kError (the caller decides); only I/O failures are a non-OK Status: kUnavailable, and the
  // connection is broken from then on (a reply may still be in flight). kInternal when Append()ed
  // commands are waiting for Flush().
  StatusOr<Reply> Command(const std::vector<std::string>& argv);
  // Same, for a keyless command that concerns the data of `route_key` (CLIENT ID of the
  // connection that reads a stream, TIME of the node that keeps a key): on a cluster it goes to
  // the primary serving route_key's slot.
  StatusOr<Reply> CommandAt(std::string_view route_key, const std::vector<std::string>& argv);
  // Same, for commands that block on the server (XREAD BLOCK): waits up to `timeout` plus the
  // regular command timeout (as a margin) for the reply, then restores the regular timeout.
  StatusOr<Reply> BlockingCommand(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout);

  // Pipelining: Append() queues commands locally; Flush() sends them all and returns the replies
  // in order (one round trip per node), error replies included. Flush() with nothing pending
  // returns an empty vector. On an I/O failure Flush() returns kUnavailable and drops the rest;
  // pending() is 0 after every Flush().
  // `block`: the pipeline ends with a command that blocks on the server for up to that long
  // (XREADGROUP BLOCK); the replies are then awaited that much longer, as BlockingCommand does.
  void Append(const std::vector<std::string>& argv);
  StatusOr<std::vector<Reply>> Flush(
      std::chrono::milliseconds block = std::chrono::milliseconds(0));
  size_t pending() const;

  // Drops the connection (and anything pending) and connects again with the same endpoint, as
  // Open() does; on a cluster, reads the slot map again. On failure the connection stays broken.
  Status Reconnect();
  bool broken() const;
  const RedisEndpoint& endpoint() const { return endpoint_; }

  // The servers that hold data, for the commands that concern one server rather than a key
  // (SCAN, FUNCTION LOAD, INFO): on a cluster its primaries ("host:port", as of the last slot map
  // read), else the one Redis (named ""). CommandOnNode sends one command to one of them.
  bool cluster() const { return cluster_ != nullptr; }
  std::vector<std::string> Nodes() const;
  StatusOr<Reply> CommandOnNode(const std::string& node, const std::vector<std::string>& argv);

 private:
  RedisConnection(RedisEndpoint endpoint, std::unique_ptr<RedisNode> node,
                  std::unique_ptr<ClusterConnection> cluster);

  RedisEndpoint endpoint_;
  std::unique_ptr<RedisNode> node_;             // a single Redis
  std::unique_ptr<ClusterConnection> cluster_;  // a cluster
  std::vector<std::vector<std::string>> cluster_pending_;
};

}  // namespace baton::internal
