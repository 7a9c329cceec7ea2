#pragma once
// The collector's HTTP server (cpp-httplib): the JSON API of docs/collector-openapi.yaml and
// Prometheus /metrics, answered from the store only (its own store connection, one request at a
// time on it).
#include <functional>
#include <memory>
#include <string>

#include "baton/status.h"
#include "collector_stats.h"
#include "sql_database.h"

namespace baton::collector {

class ApiServer {
 public:
  // `store_url`: the store to read (opened by Start()). `stats`: this process's counters.
  ApiServer(std::string store_url, const CollectorStats& stats);
  ~ApiServer();

  // Binds "host:port" (port 0 = any free one) and serves on a thread of its own.
  Status Start(const std::string& listen);
  int port() const;
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton::collector
