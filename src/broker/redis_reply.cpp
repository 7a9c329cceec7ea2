// Reply accessors and the mapping of error replies to Status codes (contract/errors.json).
#include "broker/redis_reply.h"

#include <charconv>
#include <string>
#include <string_view>

namespace baton::internal {
namespace {

struct ErrorCode {
  std::string_view prefix;
  StatusCode code;
};
constexpr ErrorCode kErrorCodes[] = {
    {"BATON_INVALID", StatusCode::kInvalidArgument},
    {"BATON_NOT_FOUND", StatusCode::kNotFound},
    {"BATON_CONFLICT", StatusCode::kConflict},
};

// Redis' own errors by their first word (contract/errors.json "redis_errors"), with a hint.
struct RedisError {
  std::string_view prefix;
  StatusCode code;
  std::string_view hint;
};
constexpr RedisError kRedisErrors[] = {
    {"OOM", StatusCode::kResourceExhausted,
     "Redis reached maxmemory: raise maxmemory or drain queues (Baton needs maxmemory-policy "
     "noeviction)"},
    {"READONLY", StatusCode::kUnavailable, "connected to a replica: point Baton at the primary"},
    {"LOADING", StatusCode::kUnavailable, "Redis is loading its dataset: retry shortly"},
    {"BUSY", StatusCode::kUnavailable, "Redis is busy running a script: retry shortly"},
    {"MASTERDOWN", StatusCode::kUnavailable, "the replica lost its primary"},
    {"CLUSTERDOWN", StatusCode::kUnavailable, "the cluster is down"},
    {"TRYAGAIN", StatusCode::kUnavailable, "the cluster is resharding: retry"},
    {"NOSCRIPT", StatusCode::kVersionMismatch, "run 'baton init'"},
    {"ERR Function not found", StatusCode::kVersionMismatch,
     "the Baton functions library is not loaded: run 'baton init'"},
};

// Where a "BATON_..." code word starts: at the beginning, or after a prefix Redis adds when a
// script raises a plain Lua error ("ERR user_function:12: BATON_INVALID ...").
std::size_t FindBatonCode(std::string_view text) {
  std::size_t pos = 0;
  while ((pos = text.find("BATON_", pos)) != std::string_view::npos) {
    if (pos == 0 || text[pos - 1] == ' ') return pos;
    ++pos;
  }
  return std::string_view::npos;
}

}  // namespace

std::string Reply::AsString() const {
  switch (type) {
    case Type::kString:
    case Type::kStatus:
      return str;
    case Type::kInteger:
      return std::to_string(integer);
    default:
      return "";
  }
}

long long Reply::AsInteger() const {
  if (type == Type::kInteger) return integer;
  if (type != Type::kString) return 0;
  long long value = 0;
  auto [ptr, ec] = std::from_chars(str.data(), str.data() + str.size(), value);
  if (ec != std::errc() || ptr != str.data() + str.size()) return 0;
  return value;
}

Status StatusFromErrorReply(const Reply& reply) {
  if (reply.type != Reply::Type::kError) {
    return Status::Internal("expected an error reply, got " + reply.AsString());
  }
  const std::string_view text = reply.str;
  if (const std::size_t pos = FindBatonCode(text); pos != std::string_view::npos) {
    std::string_view rest = text.substr(pos);
    for (const ErrorCode& error : kErrorCodes) {
      if (rest.substr(0, error.prefix.size()) != error.prefix) continue;
      std::string_view message = rest.substr(error.prefix.size());
      if (!message.empty() && message.front() != ' ') continue;  // BATON_INVALIDX: not ours
      while (!message.empty() && message.front() == ' ') message.remove_prefix(1);
      return Status(error.code, std::string(message));
    }
  }
  for (const RedisError& error : kRedisErrors) {
    if (text.substr(0, error.prefix.size()) != error.prefix) continue;
    return Status(error.code, "redis: " + reply.str + " (" + std::string(error.hint) + ")");
  }
  return Status::Internal("redis: " + reply.str);
}

}  // namespace baton::internal
