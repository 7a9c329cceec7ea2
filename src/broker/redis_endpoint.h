#pragma once
// Where one Redis (or the seed nodes of one Redis Cluster) is, and how to log in.
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "baton/redis_options.h"
#include "baton/status.h"

namespace baton::internal {

// One "host:port" of a Redis Cluster seed list.
struct RedisSeed {
  std::string host;
  int port = 6379;
  bool operator==(const RedisSeed&) const = default;
};

// Parsed "redis://[user:password@]host:port[/db]" (also "unix:///path/to.sock[?db=N&password=P]"
// and "redis+cluster://[user:password@]host:port[,host:port...]").
struct RedisEndpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  // redis+cluster://: every seed node in the URL's order (host and port above are the first).
  // Empty for a single Redis.
  std::vector<RedisSeed> cluster_seeds;
  std::string unix_socket;
  std::string username;
  std::string password;
  int db = 0;
  // Connect and per-command reply timeout of the connections opened to this endpoint.
  std::chrono::milliseconds timeout{5000};
  // Port defaults to 6379, db to 0; user and password may be percent-encoded; IPv6 hosts in
  // brackets. Errors: kInvalidArgument "redis_url: <rule>" (never echoes the password).
  static StatusOr<RedisEndpoint> Parse(std::string_view url);
  // Parse(options.url), with options.timeout.
  static StatusOr<RedisEndpoint> FromOptions(const RedisOptions& options);
  bool cluster() const { return !cluster_seeds.empty(); }
  // The same credentials and timeout, for one node of the cluster (db 0, no seeds).
  RedisEndpoint Node(const std::string& node_host, int node_port) const;
};

}  // namespace baton::internal
