// Parsing of Redis URLs:
//   redis://[[user]:password@]host[:port][/db]     host may be a bracketed IPv6 address
//   unix:///path/to/redis.sock[?db=N&password=P&user=U]
//   redis+cluster://[[user]:password@]host[:port][,host[:port]...]   seed nodes of a cluster
// User and password may be percent-encoded. Errors never echo the password.
#include "broker/redis_endpoint.h"

#include <charconv>
#include <string>
#include <string_view>

namespace baton::internal {
namespace {

constexpr std::string_view kRedisScheme = "redis://";
constexpr std::string_view kUnixScheme = "unix://";
constexpr std::string_view kClusterScheme = "redis+cluster://";

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

// "host[:port]" or "[v6]:port"; the port stays as it is when absent.
Status ParseHostPort(std::string_view authority, std::string* host_out, int* port_out) {
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
  *host_out = std::string(host);
  if (!port.empty() && !ParseInt(port, 1, 65535, port_out)) {
    return UrlError("port must be 1..65535 (got '" + std::string(port) + "')");
  }
  return Status::Ok();
}

// Splits "[userinfo@]authority" and parses the userinfo. userinfo ends at the last '@' (a
// password may contain '@' only percent-encoded, but be lenient).
StatusOr<std::string_view> TakeUserInfo(std::string_view authority, RedisEndpoint* endpoint) {
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    if (Status s = ParseUserInfo(authority.substr(0, at), endpoint); !s.ok()) return s;
    authority.remove_prefix(at + 1);
  }
  return authority;
}

Status ParseTcp(std::string_view rest, RedisEndpoint* endpoint) {
  // Authority ends at the first '/'.
  const std::size_t slash = rest.find('/');
  const std::string_view path =
      slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  StatusOr<std::string_view> authority = TakeUserInfo(rest.substr(0, slash), endpoint);
  if (!authority.ok()) return authority.status();
  if (Status s = ParseHostPort(*authority, &endpoint->host, &endpoint->port); !s.ok()) return s;
  if (!path.empty() && !ParseInt(path, 0, 1 << 20, &endpoint->db)) {
    return UrlError("db must be a non-negative integer (got '" + std::string(path) + "')");
  }
  return Status::Ok();
}

// "[user:password@]host:port[,host:port...]": the seed nodes of a Redis Cluster.
Status ParseCluster(std::string_view rest, RedisEndpoint* endpoint) {
  if (rest.find('/') != std::string_view::npos) {
    return UrlError("redis+cluster:// takes no /db (a cluster has only db 0)");
  }
  StatusOr<std::string_view> authority = TakeUserInfo(rest, endpoint);
  if (!authority.ok()) return authority.status();
  std::string_view seeds = *authority;
  while (true) {
    const std::size_t comma = seeds.find(',');
    RedisSeed seed;
    if (Status s = ParseHostPort(seeds.substr(0, comma), &seed.host, &seed.port); !s.ok()) {
      return UrlError("seed " + std::to_string(endpoint->cluster_seeds.size() + 1) + ": " +
                      std::string(s.message().substr(s.message().find(": ") + 2)) +
                      " (redis+cluster://host:port[,host:port...])");
    }
    endpoint->cluster_seeds.push_back(std::move(seed));
    if (comma == std::string_view::npos) break;
    seeds.remove_prefix(comma + 1);
  }
  endpoint->host = endpoint->cluster_seeds.front().host;
  endpoint->port = endpoint->cluster_seeds.front().port;
  return Status::Ok();
}

}  // namespace

RedisEndpoint RedisEndpoint::Node(const std::string& node_host, int node_port) const {
  RedisEndpoint node;
  node.host = node_host;
  node.port = node_port;
  node.username = username;
  node.password = password;
  node.timeout = timeout;
  return node;
}

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
  } else if (url.substr(0, kClusterScheme.size()) == kClusterScheme) {
    status = ParseCluster(url.substr(kClusterScheme.size()), &endpoint);
  } else if (url.substr(0, kUnixScheme.size()) == kUnixScheme) {
    status = ParseUnix(url.substr(kUnixScheme.size()), &endpoint);
  } else {
    status = UrlError(
        "must start with redis://, unix:// or redis+cluster:// "
        "(redis://[user:password@]host[:port][/db]); TLS (rediss://) is not supported");
  }
  if (!status.ok()) return status;
  return endpoint;
}

}  // namespace baton::internal
