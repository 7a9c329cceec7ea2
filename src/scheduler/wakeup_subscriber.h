#pragma once
// Listens on the channels the functions publish to: baton:v2:wakeup ("NS|TYPE|due_ms", when a
// scheduled task becomes the earliest of its set, so a promoter sleeping until a later due time can
// wake up early) and, when asked, baton:v2:types ("NS|TYPE", when a task type is new to its
// namespace, so batond serves it without a restart), through a broker Subscription. Reconnects with
// backoff when the connection breaks, and says so (messages may have been missed meanwhile).
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "baton/status.h"
#include "broker/redis_connection.h"
#include "broker/subscription.h"
#include "core/loop_log.h"
#include "scheduler/type_ref.h"

namespace baton::internal {

struct WakeupMessage {
  std::string ns;
  std::string type;
  std::int64_t due_ms = 0;  // Unix ms, Redis server clock
};

// Parses "NS|TYPE|due_ms"; false when the text has another shape or a name is invalid.
bool ParseWakeupMessage(std::string_view text, WakeupMessage* out);
// Parses "NS|TYPE"; false when the text has another shape or a name is invalid.
bool ParseTypeMessage(std::string_view text, TypeRef* out);

class WakeupSubscriber {
 public:
  // Every handler runs on the subscriber thread. on_type empty: baton:v2:types is not subscribed.
  struct Handlers {
    std::function<void(const WakeupMessage&)> on_wakeup;
    std::function<void(const TypeRef&)> on_type;
    // After a reconnect (messages may have been missed while the connection was down).
    std::function<void()> on_resubscribed;
  };

  // `log` empty: nothing is logged.
  WakeupSubscriber(RedisEndpoint endpoint, Handlers handlers, LogFn log = {});
  ~WakeupSubscriber();  // Stop()s
  WakeupSubscriber(const WakeupSubscriber&) = delete;
  WakeupSubscriber& operator=(const WakeupSubscriber&) = delete;

  // Subscribes (synchronously, so a message published after Start() returned OK is seen), then
  // starts the listening thread. When the first subscribe fails, the thread still starts and keeps
  // retrying (on_resubscribed runs once it succeeds), and the failure is returned for the caller
  // to report.
  Status Start();
  void Stop();

 private:
  Status Subscribe();              // (re)connects sub_ and subscribes
  void Loop(const Status& first);  // first: the outcome of the subscribe in Start()
  void Dispatch(std::string_view channel, std::string_view payload);

  RedisEndpoint endpoint_;
  Handlers handlers_;
  LogFn log_;
  std::unique_ptr<Subscription> sub_;  // owned by the listening thread once it runs
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace baton::internal
