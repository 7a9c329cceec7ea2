#include "scheduler/wakeup_subscriber.h"

#include <hiredis/hiredis.h>
#include <poll.h>

#include <charconv>
#include <chrono>
#include <vector>

#include "baton/task.h"
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

// The next reply on a blocking context (a further SUBSCRIBE confirmation).
ReplyPtr ReadOne(redisContext* ctx) {
  void* raw = nullptr;
  if (redisGetReply(ctx, &raw) != REDIS_OK) return nullptr;
  return ReplyPtr(static_cast<redisReply*>(raw));
}

}  // namespace

bool ParseTypeMessage(std::string_view text, TypeRef* out) {
  std::size_t bar = text.find('|');
  if (bar == std::string_view::npos) return false;
  std::string_view ns = text.substr(0, bar);
  std::string_view type = text.substr(bar + 1);
  if (!IsValidName(ns) || !IsValidName(type)) return false;
  out->ns = std::string(ns);
  out->type = std::string(type);
  return true;
}

bool ParseWakeupMessage(std::string_view text, WakeupMessage* out) {
  std::size_t last = text.rfind('|');
  if (last == std::string_view::npos) return false;
  TypeRef ref;
  if (!ParseTypeMessage(text.substr(0, last), &ref)) return false;
  std::string_view digits = text.substr(last + 1);
  std::int64_t due = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), due);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || digits.empty()) return false;
  out->ns = std::move(ref.ns);
  out->type = std::move(ref.type);
  out->due_ms = due;
  return true;
}

WakeupSubscriber::WakeupSubscriber(RedisEndpoint endpoint, Handlers handlers, LogFn log)
    : endpoint_(std::move(endpoint)),
      handlers_(std::move(handlers)),
      log_(log ? std::move(log) : StderrLog()) {}

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
    return Status::Unavailable("subscriber: connect: " + why);
  }
  // A subscriber only reads: TCP keepalive lets it notice a peer that vanished silently.
  if (endpoint_.unix_socket.empty()) redisEnableKeepAlive(ctx_);
  if (!endpoint_.password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!endpoint_.username.empty()) auth.push_back(endpoint_.username);
    auth.push_back(endpoint_.password);
    ReplyPtr r = RunCommand(ctx_, auth);
    if (!r || r->type == REDIS_REPLY_ERROR) {
      std::string why = r ? std::string(r->str, r->len) : std::string(ctx_->errstr);
      Disconnect();
      return Status::Unavailable("subscriber: AUTH: " + why);
    }
  }
  std::vector<std::string> subscribe = {"SUBSCRIBE", std::string(Keys::kWakeupChannel)};
  if (handlers_.on_type) subscribe.emplace_back(Keys::kTypesChannel);
  // One confirmation per channel.
  for (std::size_t i = 1; i < subscribe.size(); ++i) {
    ReplyPtr r = i == 1 ? RunCommand(ctx_, subscribe) : ReadOne(ctx_);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
      std::string why = r && r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len)
                                                          : std::string(ctx_->errstr);
      Disconnect();
      return Status::Unavailable("subscriber: SUBSCRIBE: " + why);
    }
  }
  return Status::Ok();
}

Status WakeupSubscriber::Start() {
  stopping_ = false;
  Status first = Subscribe();
  thread_ = std::thread([this, first] { Loop(first); });
  return first;
}

void WakeupSubscriber::Stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void WakeupSubscriber::Dispatch(std::string_view channel, std::string_view payload) {
  if (channel == Keys::kWakeupChannel) {
    WakeupMessage msg;
    if (handlers_.on_wakeup && ParseWakeupMessage(payload, &msg)) handlers_.on_wakeup(msg);
  } else if (channel == Keys::kTypesChannel) {
    TypeRef ref;
    if (handlers_.on_type && ParseTypeMessage(payload, &ref)) handlers_.on_type(ref);
  }
}

void WakeupSubscriber::Loop(const Status& first) {
  Backoff backoff;
  OutageLog outage("subscriber");
  // When the first subscribe failed, on_resubscribed runs once a later one works.
  if (!first.ok()) outage.Failed(log_, first, backoff.Peek());
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
      outage.Succeeded(log_);
      if (handlers_.on_resubscribed) handlers_.on_resubscribed();
      continue;
    }
    void* raw = nullptr;
    if (redisGetReplyFromReader(ctx_, &raw) != REDIS_OK) {
      outage.Failed(log_, Status::Unavailable("subscriber: protocol error"), backoff.Peek());
      Disconnect();
      continue;
    }
    if (raw == nullptr) {
      // Nothing buffered: wait for the socket with a timeout, so the thread can see Stop().
      pollfd pfd{ctx_->fd, POLLIN, 0};
      int n = poll(&pfd, 1, kPollMs);
      if (n > 0 && redisBufferRead(ctx_) != REDIS_OK) {
        std::string why = ctx_->errstr;
        outage.Failed(log_, Status::Unavailable("subscriber: connection lost: " + why),
                      backoff.Peek());
        Disconnect();
      }
      continue;
    }
    ReplyPtr reply(static_cast<redisReply*>(raw));
    // A pushed message is ["message", channel, payload].
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
        reply->element[0]->type == REDIS_REPLY_STRING &&
        std::string_view(reply->element[0]->str, reply->element[0]->len) == "message" &&
        reply->element[1]->type == REDIS_REPLY_STRING &&
        reply->element[2]->type == REDIS_REPLY_STRING) {
      Dispatch(std::string_view(reply->element[1]->str, reply->element[1]->len),
               std::string_view(reply->element[2]->str, reply->element[2]->len));
    }
  }
}

}  // namespace baton::internal
