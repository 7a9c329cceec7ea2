#pragma once
// baton-console's HTTP server: the JSON API of docs/console.md, the live SSE stream and the built
// front end, with the security headers on every answer.
#include <memory>

#include "baton/status.h"
#include "console_config.h"

namespace baton::console {

class ConsoleServer {
 public:
  // Reads the users file, finds the front end, opens and migrates the store. Fails with a
  // message naming what is wrong (a user's field, a missing front end, an unreachable store).
  static StatusOr<std::unique_ptr<ConsoleServer>> Create(const ConsoleConfig& config);
  ~ConsoleServer();

  // Binds config.listen (port 0: any free port) and serves on a thread of its own.
  Status Start();
  int port() const;
  void Stop();

 private:
  struct Impl;
  explicit ConsoleServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton::console
