// RedisNode on hiredis 0.14 (synchronous API). Commands are always sent with
// redisAppendCommandArgv (binary safe), so a single command and a pipeline share one path.
// A failed read or write leaves hiredis' context unusable (ctx_->err is set): the connection
// then reports kUnavailable until Reconnect().
#include "broker/redis_node.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <cerrno>
#include <memory>
#include <string>
#include <utility>

namespace baton::internal {
namespace {

timeval ToTimeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

std::string Where(const RedisEndpoint& endpoint) {
  if (!endpoint.unix_socket.empty()) return endpoint.unix_socket;
  if (endpoint.host.find(':') != std::string::npos) {
    return "[" + endpoint.host + "]:" + std::to_string(endpoint.port);
  }
  return endpoint.host + ":" + std::to_string(endpoint.port);
}

Reply CopyReply(const redisReply* r) {
  Reply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = Reply::Type::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = Reply::Type::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = Reply::Type::kError;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = Reply::Type::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::Type::kArray;
      out.elements.reserve(r->elements);
      for (std::size_t i = 0; i < r->elements; ++i)
        out.elements.push_back(CopyReply(r->element[i]));
      break;
    default:  // REDIS_REPLY_NIL
      out.type = Reply::Type::kNil;
      break;
  }
  return out;
}

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};

}  // namespace

RedisNode::RedisNode(RedisEndpoint endpoint, std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout) {}

RedisNode::~RedisNode() {
  if (ctx_ != nullptr) redisFree(ctx_);
}

StatusOr<std::unique_ptr<RedisNode>> RedisNode::Open(
    const RedisEndpoint& endpoint, std::optional<std::chrono::milliseconds> timeout) {
  std::unique_ptr<RedisNode> connection(
      new RedisNode(endpoint, timeout.value_or(endpoint.timeout)));
  if (Status s = connection->Connect(); !s.ok()) return s;
  return connection;
}

Status RedisNode::Connect() {
  if (ctx_ != nullptr) {
    redisFree(ctx_);
    ctx_ = nullptr;
  }
  pending_ = 0;
  last_error_.clear();
  const std::string where = "redis " + Where(endpoint_);
  const timeval tv = ToTimeval(timeout_);
  redisContext* c = endpoint_.unix_socket.empty()
                        ? redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port, tv)
                        : redisConnectUnixWithTimeout(endpoint_.unix_socket.c_str(), tv);
  if (c == nullptr) return Status::Unavailable(where + ": cannot allocate a connection");
  if (c->err != 0) {
    std::string error = c->errstr;
    redisFree(c);
    last_error_ = error;
    return Status::Unavailable(where + ": " + error);
  }
  if (redisSetTimeout(c, tv) != REDIS_OK) {
    std::string error = c->errstr;
    redisFree(c);
    return Status::Unavailable(where + ": cannot set the socket timeout: " + error);
  }
  if (endpoint_.unix_socket.empty()) redisEnableKeepAlive(c);
  ctx_ = c;
  GuardReplyArrays(ctx_, &guard_);

  // AUTH and SELECT as the endpoint says, then PING: a server that needs a password we lack
  // answers NOAUTH, which is better reported now than on the first real command.
  auto setup = [&](const std::vector<std::string>& argv, std::string_view what) -> Status {
    StatusOr<Reply> reply = Command(argv);
    if (!reply.ok()) return reply.status();
    if (reply->is_error()) {
      return Status::Unavailable(where + ": " + std::string(what) + ": " + reply->str);
    }
    return Status::Ok();
  };
  Status status;
  if (!endpoint_.password.empty()) {
    status = endpoint_.username.empty()
                 ? setup({"AUTH", endpoint_.password}, "AUTH failed")
                 : setup({"AUTH", endpoint_.username, endpoint_.password}, "AUTH failed");
  }
  if (status.ok() && endpoint_.db != 0) {
    status = setup({"SELECT", std::to_string(endpoint_.db)}, "SELECT failed");
  }
  if (status.ok()) status = setup({"PING"}, "PING failed");
  if (!status.ok()) {
    redisFree(ctx_);
    ctx_ = nullptr;
    last_error_ = status.message();
  }
  return status;
}

Status RedisNode::Reconnect() { return Connect(); }

bool RedisNode::broken() const { return ctx_ == nullptr || ctx_->err != 0; }

Status RedisNode::BrokenStatus() const {
  return Status::Unavailable("redis " + Where(endpoint_) + ": connection broken (" +
                             (last_error_.empty() ? "not connected" : last_error_) +
                             "); Reconnect() first");
}

StatusOr<Reply> RedisNode::ReadReply() {
  void* raw = nullptr;
  if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr) {
    const bool timed_out = ctx_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK);
    last_error_ = timed_out ? "timed out waiting for a reply" : ReadErrorText(ctx_, guard_);
    if (ctx_->err == 0) {
      // Cannot happen with a blocking context; keep the invariant "failed read => broken".
      ctx_->err = REDIS_ERR_OTHER;
    }
    return Status::Unavailable("redis " + Where(endpoint_) + ": " + last_error_);
  }
  std::unique_ptr<redisReply, ReplyDeleter> reply(static_cast<redisReply*>(raw));
  return CopyReply(reply.get());
}

StatusOr<Reply> RedisNode::Command(const std::vector<std::string>& argv) {
  if (broken()) return BrokenStatus();
  if (pending_ != 0) {
    return Status::Internal("redis: Command() with " + std::to_string(pending_) +
                            " pipelined commands not flushed; call Flush() first");
  }
  Append(argv);
  pending_ = 0;
  return ReadReply();
}

StatusOr<Reply> RedisNode::BlockingCommand(const std::vector<std::string>& argv,
                                           std::chrono::milliseconds timeout) {
  if (broken()) return BrokenStatus();
  // The server holds the reply for up to `timeout`; the regular command timeout is the margin for
  // the network and a busy server.
  if (redisSetTimeout(ctx_, ToTimeval(timeout + timeout_)) != REDIS_OK) {
    last_error_ = ctx_->errstr;
    return BrokenStatus();
  }
  StatusOr<Reply> reply = Command(argv);
  if (!broken() && redisSetTimeout(ctx_, ToTimeval(timeout_)) != REDIS_OK) {
    last_error_ = ctx_->errstr;
    return BrokenStatus();
  }
  return reply;
}

void RedisNode::Append(const std::vector<std::string>& argv) {
  ++pending_;
  if (ctx_ == nullptr) return;  // Flush() reports the broken connection
  std::vector<const char*> args;
  std::vector<size_t> lengths;
  args.reserve(argv.size());
  lengths.reserve(argv.size());
  for (const std::string& arg : argv) {
    args.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  // Fails only when out of memory; hiredis then sets ctx_->err, which Flush() reports.
  redisAppendCommandArgv(ctx_, static_cast<int>(args.size()), args.data(), lengths.data());
}

Status RedisNode::Send() {
  if (pending_ == 0) return Status::Ok();
  if (broken()) return BrokenStatus();
  int done = 0;
  while (done == 0) {
    if (redisBufferWrite(ctx_, &done) != REDIS_OK) {
      last_error_ = ctx_->errstr;
      return Status::Unavailable("redis " + Where(endpoint_) + ": " + last_error_);
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<Reply>> RedisNode::Flush(std::chrono::milliseconds block) {
  const std::size_t count = pending_;
  pending_ = 0;
  if (count == 0) return std::vector<Reply>();
  if (broken()) return BrokenStatus();
  if (block.count() > 0 && redisSetTimeout(ctx_, ToTimeval(block + timeout_)) != REDIS_OK) {
    last_error_ = ctx_->errstr;
    return BrokenStatus();
  }
  std::vector<Reply> replies;
  replies.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    StatusOr<Reply> reply = ReadReply();  // the first call writes the whole buffer
    if (!reply.ok()) return reply.status();
    replies.push_back(std::move(reply).value());
  }
  if (block.count() > 0 && redisSetTimeout(ctx_, ToTimeval(timeout_)) != REDIS_OK) {
    last_error_ = ctx_->errstr;
    return BrokenStatus();
  }
  return replies;
}

}  // namespace baton::internal
