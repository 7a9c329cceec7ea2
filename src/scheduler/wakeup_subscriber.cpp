#include "scheduler/wakeup_subscriber.h"

#include <hiredis/hiredis.h>
#include <poll.h>

#include <charconv>
#include <chrono>
#include <vector>

#include "core/keys.h"
#include "scheduler/backoff.h"

namespace baton::internal {

namespace {

constexpr int kPollMs = 100;  // how often the listening thread checks for Stop()

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

ReplyPtr RunCommand(redisContext* ctx, const std::vector<std::string>& argv) {
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (const std::string& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  return ReplyPtr(static_cast<redisReply*>(
      redisCommandArgv(ctx, static_cast<int>(args.size()), args.data(), lens.data())));
}

}  // namespace

bool ParseWakeupMessage(const std::string& text, WakeupMessage* out) {
  std::size_t first = text.find('|');
  if (first == std::string::npos) return false;
  std::size_t second = text.find('|', first + 1);
  if (second == std::string::npos) return false;
  const char* begin = text.data() + second + 1;
  const char* end = text.data() + text.size();
  std::int64_t due = 0;
  auto [ptr, ec] = std::from_chars(begin, end, due);
  if (ec != std::errc() || ptr != end || begin == end) return false;
  out->ns = text.substr(0, first);
  out->type = text.substr(first + 1, second - first - 1);
  out->due_ms = due;
  return !out->ns.empty() && !out->type.empty();
}

WakeupSubscriber::WakeupSubscriber(RedisEndpoint endpoint,
                                   std::function<void(const WakeupMessage&)> on_message,
                                   std::function<void()> on_resubscribed)
    : endpoint_(std::move(endpoint)),
      on_message_(std::move(on_message)),
      on_resubscribed_(std::move(on_resubscribed)) {}

WakeupSubscriber::~WakeupSubscriber() {
  Stop();
  Disconnect();
}

void WakeupSubscriber::Disconnect() {
  if (ctx_ != nullptr) redisFree(ctx_);
  ctx_ = nullptr;
}

Status WakeupSubscriber::Subscribe() {
  Disconnect();
  timeval tv{5, 0};
  ctx_ = endpoint_.unix_socket.empty()
             ? redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, tv)
             : redisConnectUnixWithTimeout(endpoint_.unix_socket.c_str(), tv);
  if (ctx_ == nullptr || ctx_->err != 0) {
    std::string why = ctx_ != nullptr ? ctx_->errstr : "out of memory";
    Disconnect();
    return Status::Unavailable("wakeup subscriber: connect: " + why);
  }
  if (!endpoint_.password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!endpoint_.username.empty()) auth.push_back(endpoint_.username);
    auth.push_back(endpoint_.password);
    ReplyPtr r = RunCommand(ctx_, auth);
    if (!r || r->type == REDIS_REPLY_ERROR) {
      std::string why = r ? std::string(r->str, r->len) : std::string(ctx_->errstr);
      Disconnect();
      return Status::Unavailable("wakeup subscriber: AUTH: " + why);
    }
  }
  ReplyPtr r = RunCommand(ctx_, {"SUBSCRIBE", std::string(Keys::kWakeupChannel)});
  if (!r || r->type != REDIS_REPLY_ARRAY) {
    std::string why =
        r && r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : std::string(ctx_->errstr);
    Disconnect();
    return Status::Unavailable("wakeup subscriber: SUBSCRIBE: " + why);
  }
  return Status::Ok();
}

Status WakeupSubscriber::Start() {
  stopping_ = false;
  Status first = Subscribe();
  thread_ = std::thread([this] { Loop(); });
  return first;
}

void WakeupSubscriber::Stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void WakeupSubscriber::Loop() {
  Backoff backoff;
  while (!stopping_) {
    if (ctx_ == nullptr) {
      // Sleep the backoff in small steps so Stop() stays prompt.
      auto until = std::chrono::steady_clock::now() + backoff.Next();
      while (!stopping_ && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (stopping_) break;
      if (!Subscribe().ok()) continue;
      backoff.Reset();
      if (on_resubscribed_) on_resubscribed_();
      continue;
    }
    void* raw = nullptr;
    if (redisGetReplyFromReader(ctx_, &raw) != REDIS_OK) {
      Disconnect();
      continue;
    }
    if (raw == nullptr) {
      // Nothing buffered: wait for the socket with a timeout, so the thread can see Stop().
      pollfd pfd{ctx_->fd, POLLIN, 0};
      int n = poll(&pfd, 1, kPollMs);
      if (n > 0 && redisBufferRead(ctx_) != REDIS_OK) Disconnect();
      continue;
    }
    ReplyPtr reply(static_cast<redisReply*>(raw));
    // A pushed message is ["message", channel, payload].
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
        reply->element[0]->type == REDIS_REPLY_STRING &&
        std::string(reply->element[0]->str, reply->element[0]->len) == "message" &&
        reply->element[2]->type == REDIS_REPLY_STRING) {
      WakeupMessage msg;
      if (ParseWakeupMessage(std::string(reply->element[2]->str, reply->element[2]->len), &msg)) {
        on_message_(msg);
      }
    }
  }
}

}  // namespace baton::internal
