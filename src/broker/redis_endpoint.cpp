// Parsing of Redis URLs:
//   redis://[[user]:password@]host[:port][/db]     host may be a bracketed IPv6 address
//   unix:///path/to/redis.sock[?db=N&password=P&user=U]
// User and password may be percent-encoded. Errors never echo the password.
#include <charconv>
#include <string>
#include <string_view>

#include "broker/redis_connection.h"

namespace baton::internal {
namespace {

constexpr std::string_view kRedisScheme = "redis://";
constexpr std::string_view kUnixScheme = "unix://";

Status UrlError(std::string_view rule) { return Status::InvalidArgument("redis_url", rule); }

bool ParseInt(std::string_view text, int min, int max, int* out) {
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return false;
  if (value < min || value > max) return false;
  *out = value;
  return true;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool PercentDecode(std::string_view in, std::string* out) {
  out->clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = HexDigit(in[i + 1]);
    const int lo = HexDigit(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

// "user:password" or "password-less user".
Status ParseUserInfo(std::string_view userinfo, RedisEndpoint* endpoint) {
  const std::size_t colon = userinfo.find(':');
  const std::string_view user = userinfo.substr(0, colon);
  const std::string_view password =
      colon == std::string_view::npos ? std::string_view() : userinfo.substr(colon + 1);
  if (!PercentDecode(user, &endpoint->username) || !PercentDecode(password, &endpoint->password)) {
    return UrlError("user and password must be percent-encoded (bad '%' escape)");
  }
  return Status::Ok();
}

Status ParseUnix(std::string_view rest, RedisEndpoint* endpoint) {
  const std::size_t question = rest.find('?');
  endpoint->unix_socket = std::string(rest.substr(0, question));
  if (endpoint->unix_socket.empty() || endpoint->unix_socket.front() != '/') {
    return UrlError("unix:// needs an absolute socket path (unix:///path/to/redis.sock)");
  }
  std::string_view query =
      question == std::string_view::npos ? std::string_view() : rest.substr(question + 1);
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    const std::string_view key = pair.substr(0, eq);
    const std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    if (key == "db") {
      if (!ParseInt(value, 0, 1 << 20, &endpoint->db)) {
        return UrlError("db must be a non-negative integer (got '" + std::string(value) + "')");
      }
    } else if (key == "password") {
      if (!PercentDecode(value, &endpoint->password)) return UrlError("bad '%' escape in password");
    } else if (key == "user") {
      if (!PercentDecode(value, &endpoint->username)) return UrlError("bad '%' escape in user");
    } else {
      return UrlError("unknown unix:// parameter '" + std::string(key) +
                      "' (allowed: db, password, user)");
    }
  }
  return Status::Ok();
}

Status ParseTcp(std::string_view rest, RedisEndpoint* endpoint) {
  // Authority ends at the first '/'. userinfo ends at the last '@' (a password may contain '@'
  // only percent-encoded, but be lenient).
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  const std::string_view path =
      slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    if (Status s = ParseUserInfo(authority.substr(0, at), endpoint); !s.ok()) return s;
    authority.remove_prefix(at + 1);
  }
  std::string_view host;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return UrlError("unterminated IPv6 address '['");
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return UrlError("expected ':port' after the IPv6 address");
      port = after.substr(1);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (host.empty()) return UrlError("missing host (redis://host[:port][/db])");
  endpoint->host = std::string(host);
  if (!port.empty() && !ParseInt(port, 1, 65535, &endpoint->port)) {
    return UrlError("port must be 1..65535 (got '" + std::string(port) + "')");
  }
  if (!path.empty() && !ParseInt(path, 0, 1 << 20, &endpoint->db)) {
    return UrlError("db must be a non-negative integer (got '" + std::string(path) + "')");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<RedisEndpoint> RedisEndpoint::FromOptions(const RedisOptions& options) {
  StatusOr<RedisEndpoint> endpoint = Parse(options.url);
  if (endpoint.ok()) endpoint->timeout = options.timeout;
  return endpoint;
}

StatusOr<RedisEndpoint> RedisEndpoint::Parse(std::string_view url) {
  RedisEndpoint endpoint;
  Status status;
  if (url.substr(0, kRedisScheme.size()) == kRedisScheme) {
    status = ParseTcp(url.substr(kRedisScheme.size()), &endpoint);
  } else if (url.substr(0, kUnixScheme.size()) == kUnixScheme) {
    status = ParseUnix(url.substr(kUnixScheme.size()), &endpoint);
  } else {
    status = UrlError(
        "must start with redis:// or unix:// (redis://[user:password@]host[:port][/db]); TLS "
        "(rediss://) is not supported");
  }
  if (!status.ok()) return status;
  return endpoint;
}

}  // namespace baton::internal
