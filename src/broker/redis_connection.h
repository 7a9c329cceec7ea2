#pragma once
// One synchronous connection to Redis (hiredis), with pipelining. Not thread-safe: one connection
// per thread. Every failure is a Status; a broken connection reports kUnavailable and Reconnect()
// opens a new one.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "baton/redis_options.h"
#include "baton/status.h"

struct redisContext;
struct redisReply;

namespace baton::internal {

// Parsed "redis://[user:password@]host:port[/db]" (also "unix:///path/to.sock[?db=N&password=P]").
struct RedisEndpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string unix_socket;
  std::string username;
  std::string password;
  int db = 0;
  // Connect and per-command reply timeout of the connections opened to this endpoint.
  std::chrono::milliseconds timeout{5000};
  // Port defaults to 6379, db to 0; user and password may be percent-encoded; IPv6 hosts in
  // brackets. Errors: kInvalidArgument "redis_url: <rule>" (never echoes the password).
  static StatusOr<RedisEndpoint> Parse(std::string_view url);
  // Parse(options.url), with options.timeout.
  static StatusOr<RedisEndpoint> FromOptions(const RedisOptions& options);
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
  // Connects, then AUTH (when a password is set), SELECT (db != 0) and PING. `timeout` (default:
  // endpoint.timeout) bounds the connect and each command's reply, except BlockingCommand.
  // Errors: kUnavailable (cannot connect, NOAUTH, AUTH failed, timeout).
  static StatusOr<std::unique_ptr<RedisConnection>> Open(
      const RedisEndpoint& endpoint,
      std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Sends one command and waits for its reply. An error *reply* is returned as a Reply of type
  // kError (the caller decides); only I/O failures are a non-OK Status: kUnavailable, and the
  // connection is broken from then on (a reply may still be in flight). kInternal when Append()ed
  // commands are waiting for Flush().
  StatusOr<Reply> Command(const std::vector<std::string>& argv);
  // Same, for commands that block on the server (XREAD BLOCK): waits up to `timeout` plus the
  // regular command timeout (as a margin) for the reply, then restores the regular timeout.
  StatusOr<Reply> BlockingCommand(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout);

  // Pipelining: Append() queues commands locally; Flush() sends them all and returns the replies
  // in order (one round trip), error replies included. Flush() with nothing pending returns an
  // empty vector. On an I/O failure Flush() returns kUnavailable and drops the rest; pending() is
  // 0 after every Flush().
  // `block`: the pipeline ends with a command that blocks on the server for up to that long
  // (XREADGROUP BLOCK); the replies are then awaited that much longer, as BlockingCommand does.
  void Append(const std::vector<std::string>& argv);
  StatusOr<std::vector<Reply>> Flush(
      std::chrono::milliseconds block = std::chrono::milliseconds(0));
  size_t pending() const { return pending_; }

  // Drops the connection (and anything pending) and connects again with the same endpoint, as
  // Open() does. On failure the connection stays broken.
  Status Reconnect();
  bool broken() const;
  const RedisEndpoint& endpoint() const { return endpoint_; }

 private:
  RedisConnection(RedisEndpoint endpoint, std::chrono::milliseconds timeout);
  Status Connect();
  StatusOr<Reply> ReadReply();
  Status BrokenStatus() const;

  RedisEndpoint endpoint_;
  std::chrono::milliseconds timeout_;
  redisContext* ctx_ = nullptr;
  size_t pending_ = 0;
  std::string last_error_;  // why the connection broke, for the kUnavailable messages
};

}  // namespace baton::internal
