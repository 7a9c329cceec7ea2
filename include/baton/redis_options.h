#pragma once
// Where and how every Baton component (Client, Worker, Inspector, CronClient, batond's loops)
// reaches Redis. One struct, embedded as `redis` in each component's options.
#include <chrono>
#include <string>

namespace baton {

struct RedisOptions {
  // redis://[[user]:password@]host[:port][/db],
  // redis+cluster://[[user]:password@]host:port[,host:port...] (a Redis Cluster: seed nodes), or
  // unix:///path/to/redis.sock[?db=N&password=P&user=U] (TLS, rediss://, is not supported).
  std::string url = "redis://127.0.0.1:6379";
  // Connect and per-command timeout. Blocking reads (XREAD BLOCK) add their own block time to it.
  std::chrono::milliseconds timeout{5000};
};

}  // namespace baton
