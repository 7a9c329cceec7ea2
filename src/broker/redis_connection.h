#pragma once
// One synchronous connection to Redis (hiredis), with pipelining. Not thread-safe: one connection
// per thread. Every failure is a Status; a broken connection reports kUnavailable and Reconnect()
// opens a new one.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "baton/status.h"

struct redisContext;
struct redisReply;

namespace baton::internal {

// Parsed "redis://[user:password@]host:port[/db]" (also "unix:///path/to.sock").
struct RedisEndpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string unix_socket;
  std::string username;
  std::string password;
  int db = 0;
  static StatusOr<RedisEndpoint> Parse(std::string_view url);
};

// An owned copy of a reply tree (so it outlives hiredis' buffers and is easy to test).
struct Reply {
  enum class Type { kNil, kString, kStatus, kError, kInteger, kArray };
  Type type = Type::kNil;
  std::string str;  // kString, kStatus, kError
  long long integer = 0;
  std::vector<Reply> elements;  // kArray

  bool is_nil() const { return type == Type::kNil; }
  bool is_error() const { return type == Type::kError; }
  bool is_array() const { return type == Type::kArray; }
  // String of a kString/kStatus reply, or the decimal of a kInteger one; "" otherwise.
  std::string AsString() const;
  // Integer reply, or a kString reply holding an integer; 0 otherwise.
  long long AsInteger() const;
};

// Maps an error reply to a Status: "BATON_INVALID f: r" -> kInvalidArgument "f: r",
// BATON_NOT_FOUND -> kNotFound, BATON_CONFLICT -> kConflict, anything else -> kInternal.
Status StatusFromErrorReply(const Reply& reply);

class RedisConnection {
 public:
  // Connects (and AUTH/SELECT as the endpoint says). `timeout` bounds connect and each command,
  // except commands run with Command(..., blocking=true).
  static StatusOr<std::unique_ptr<RedisConnection>> Open(
      const RedisEndpoint& endpoint,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends one command and waits for its reply. An error *reply* is returned as a Reply of type
  // kError (the caller decides); only I/O failures are a non-OK Status.
  StatusOr<Reply> Command(const std::vector<std::string>& argv);
  // Same, for commands that block on the server (XREAD BLOCK): waits up to `timeout` for the reply.
  StatusOr<Reply> BlockingCommand(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout);

  // Pipelining: Append() queues commands locally; Flush() sends them all and returns the replies
  // in order (one round trip).
  void Append(const std::vector<std::string>& argv);
  StatusOr<std::vector<Reply>> Flush();
  size_t pending() const { return pending_; }

  // Drops the connection and connects again with the same endpoint.
  Status Reconnect();
  bool broken() const;
  const RedisEndpoint& endpoint() const { return endpoint_; }

 private:
  RedisConnection(RedisEndpoint endpoint, std::chrono::milliseconds timeout);
  Status Connect();
  StatusOr<Reply> ReadReply();

  RedisEndpoint endpoint_;
  std::chrono::milliseconds timeout_;
  redisContext* ctx_ = nullptr;
  size_t pending_ = 0;
};

}  // namespace baton::internal
