#include "broker/subscription.h"

#include <hiredis/hiredis.h>
#include <poll.h>

#include <string_view>

namespace baton::internal {
namespace {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;

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

ReplyPtr ReadOne(redisContext* ctx) {
  void* raw = nullptr;
  if (redisGetReply(ctx, &raw) != REDIS_OK) return nullptr;
  return ReplyPtr(static_cast<redisReply*>(raw));
}

// Why `reply` (possibly null) is not what was expected.
std::string Why(const redisReply* reply, const redisContext* ctx, const ReplyGuard& guard) {
  if (reply != nullptr && reply->type == REDIS_REPLY_ERROR)
    return std::string(reply->str, reply->len);
  if (ctx->err != 0) return ReadErrorText(ctx, guard);
  return "unexpected reply";
}

std::string_view Text(const redisReply* r) { return std::string_view(r->str, r->len); }

}  // namespace

StatusOr<std::unique_ptr<Subscription>> Subscription::Open(
    const RedisEndpoint& endpoint, const std::vector<std::string>& channels) {
  if (!endpoint.cluster()) return OpenOne(endpoint, channels);
  // A cluster delivers every PUBLISH to every node: any seed that answers will do.
  Status last;
  for (const RedisSeed& seed : endpoint.cluster_seeds) {
    auto opened = OpenOne(endpoint.Node(seed.host, seed.port), channels);
    if (opened.ok()) return opened;
    last = opened.status();
  }
  return last;
}

StatusOr<std::unique_ptr<Subscription>> Subscription::OpenOne(
    const RedisEndpoint& endpoint, const std::vector<std::string>& channels) {
  const auto ms = endpoint.timeout.count();
  timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
  ContextPtr ctx(endpoint.unix_socket.empty()
                     ? redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, tv)
                     : redisConnectUnixWithTimeout(endpoint.unix_socket.c_str(), tv));
  if (ctx == nullptr) return Status::Unavailable("subscribe: connect: out of memory");
  if (ctx->err != 0) return Status::Unavailable(std::string("subscribe: connect: ") + ctx->errstr);
  if (endpoint.unix_socket.empty()) redisEnableKeepAlive(ctx.get());
  auto guard = std::make_unique<ReplyGuard>();
  GuardReplyArrays(ctx.get(), guard.get());
  if (!endpoint.password.empty()) {
    std::vector<std::string> auth = {"AUTH"};
    if (!endpoint.username.empty()) auth.push_back(endpoint.username);
    auth.push_back(endpoint.password);
    ReplyPtr r = RunCommand(ctx.get(), auth);
    if (!r || r->type == REDIS_REPLY_ERROR) {
      return Status::Unavailable("subscribe: AUTH: " + Why(r.get(), ctx.get(), *guard));
    }
  }
  if (endpoint.db != 0) {
    // Pub/Sub channels are global, but SELECT keeps the connection's view consistent with the rest.
    ReplyPtr r = RunCommand(ctx.get(), {"SELECT", std::to_string(endpoint.db)});
    if (!r || r->type == REDIS_REPLY_ERROR) {
      return Status::Unavailable("subscribe: SELECT: " + Why(r.get(), ctx.get(), *guard));
    }
  }
  std::vector<std::string> subscribe = {"SUBSCRIBE"};
  subscribe.insert(subscribe.end(), channels.begin(), channels.end());
  // One confirmation per channel.
  for (std::size_t i = 0; i < channels.size(); ++i) {
    ReplyPtr r = i == 0 ? RunCommand(ctx.get(), subscribe) : ReadOne(ctx.get());
    if (!r || r->type != REDIS_REPLY_ARRAY) {
      return Status::Unavailable("subscribe: SUBSCRIBE: " + Why(r.get(), ctx.get(), *guard));
    }
  }
  return std::unique_ptr<Subscription>(new Subscription(ctx.release(), std::move(guard)));
}

Subscription::~Subscription() { redisFree(ctx_); }

int Subscription::fd() const { return ctx_->fd; }

bool Subscription::TakeBuffered(std::vector<PubSubMessage>* out) {
  while (true) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(ctx_, &raw) != REDIS_OK) return false;
    if (raw == nullptr) return true;
    ReplyPtr reply(static_cast<redisReply*>(raw));
    // A pushed message is ["message", channel, payload]; anything else is ignored.
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
        reply->element[0]->type == REDIS_REPLY_STRING && Text(reply->element[0]) == "message" &&
        reply->element[1]->type == REDIS_REPLY_STRING &&
        reply->element[2]->type == REDIS_REPLY_STRING) {
      out->push_back({std::string(Text(reply->element[1])), std::string(Text(reply->element[2]))});
    }
  }
}

StatusOr<std::vector<PubSubMessage>> Subscription::ReadAvailable() {
  std::vector<PubSubMessage> out;
  if (!TakeBuffered(&out)) {
    return Status::Unavailable("subscribe: " + ReadErrorText(ctx_, *guard_));
  }
  pollfd pfd{ctx_->fd, POLLIN, 0};
  if (poll(&pfd, 1, 0) > 0) {
    if (redisBufferRead(ctx_) != REDIS_OK) {
      return Status::Unavailable("subscribe: connection lost: " + ReadErrorText(ctx_, *guard_));
    }
    if (!TakeBuffered(&out)) {
      return Status::Unavailable("subscribe: " + ReadErrorText(ctx_, *guard_));
    }
  }
  return out;
}

StatusOr<std::vector<PubSubMessage>> Subscription::Wait(std::chrono::milliseconds timeout) {
  std::vector<PubSubMessage> out;
  if (!TakeBuffered(&out)) {
    return Status::Unavailable("subscribe: " + ReadErrorText(ctx_, *guard_));
  }
  if (!out.empty()) return out;
  pollfd pfd{ctx_->fd, POLLIN, 0};
  if (poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) return out;
  return ReadAvailable();
}

}  // namespace baton::internal
