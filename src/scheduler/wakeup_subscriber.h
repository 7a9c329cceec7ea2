#pragma once
// Listens on the channel baton:wakeup, where baton_enqueue publishes "NS|TYPE|due_ms" when a
// scheduled task becomes the earliest of its set, so a promoter sleeping until a later due time can
// wake up early. Uses its own hiredis connection in subscribe mode (RedisConnection only speaks
// request/reply). Reconnects with backoff when the connection breaks.
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "baton/status.h"
#include "broker/redis_connection.h"

struct redisContext;

namespace baton::internal {

struct WakeupMessage {
  std::string ns;
  std::string type;
  std::int64_t due_ms = 0;  // Unix ms, Redis server clock
};

// Parses "NS|TYPE|due_ms"; false when the text has another shape.
bool ParseWakeupMessage(const std::string& text, WakeupMessage* out);

class WakeupSubscriber {
 public:
  // `on_message` runs on the subscriber thread for every well-formed message. `on_resubscribed`
  // runs after a reconnect (messages may have been missed while the connection was down).
  WakeupSubscriber(RedisEndpoint endpoint, std::function<void(const WakeupMessage&)> on_message,
                   std::function<void()> on_resubscribed);
  ~WakeupSubscriber();  // Stop()s
  WakeupSubscriber(const WakeupSubscriber&) = delete;
  WakeupSubscriber& operator=(const WakeupSubscriber&) = delete;

  // Subscribes (synchronously, so a message published after Start() returned OK is seen), then
  // starts the listening thread. When the first subscribe fails, the thread still starts and keeps
  // retrying, and the failure is returned for the caller to report.
  Status Start();
  void Stop();

 private:
  Status Subscribe();  // (re)connects ctx_ and subscribes
  void Disconnect();
  void Loop();

  RedisEndpoint endpoint_;
  std::function<void(const WakeupMessage&)> on_message_;
  std::function<void()> on_resubscribed_;
  redisContext* ctx_ = nullptr;  // owned by the listening thread once it runs
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace baton::internal
