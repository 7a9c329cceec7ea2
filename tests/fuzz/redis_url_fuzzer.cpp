// Redis URLs (--redis, BATON_REDIS_URL, config files: src/broker/redis_endpoint.cpp). Properties:
//  - a rejected URL gets kInvalidArgument "redis_url: <rule>", and the rule never shows the
//    password (only the quoted parts of a rule echo input: none may hold it);
//  - an accepted one has a host or an absolute socket path, a port 1..65535 and a db 0..2^20.
#include <string>

#include "broker/redis_connection.h"
#include "fuzz_check.h"
#include "fuzz_targets.h"

namespace baton::fuzz {
namespace {

// The raw password of a redis:// URL as the parser splits it: the userinfo ends at the last '@'
// of the authority, the password starts after its first ':'.
std::string_view RawPassword(std::string_view url) {
  constexpr std::string_view kScheme = "redis://";
  if (url.substr(0, kScheme.size()) != kScheme) return {};
  std::string_view authority = url.substr(kScheme.size());
  authority = authority.substr(0, authority.find('/'));
  const std::size_t at = authority.rfind('@');
  if (at == std::string_view::npos) return {};
  const std::string_view userinfo = authority.substr(0, at);
  const std::size_t colon = userinfo.find(':');
  return colon == std::string_view::npos ? std::string_view() : userinfo.substr(colon + 1);
}

// True when a quoted part ('...') of `message` contains `secret`.
bool QuotesSecret(std::string_view message, std::string_view secret) {
  std::size_t open = message.find('\'');
  while (open != std::string_view::npos) {
    const std::size_t close = message.find('\'', open + 1);
    if (close == std::string_view::npos) break;
    if (message.substr(open + 1, close - open - 1).find(secret) != std::string_view::npos) {
      return true;
    }
    open = message.find('\'', close + 1);
  }
  return false;
}

}  // namespace

int FuzzRedisUrl(const std::uint8_t* data, std::size_t size) {
  const std::string_view url = AsText(data, size);
  StatusOr<internal::RedisEndpoint> endpoint = internal::RedisEndpoint::Parse(url);
  if (!endpoint.ok()) {
    const Status& status = endpoint.status();
    BATON_FUZZ_CHECK(NamesAField(status, {"redis_url"}), status.ToString());
    // A password that also appears outside the userinfo may be quoted from there.
    const std::string_view password = RawPassword(url);
    if (password.size() >= 3) {
      std::string rest(url);
      rest.erase(static_cast<std::size_t>(password.data() - url.data()), password.size());
      BATON_FUZZ_CHECK(
          !QuotesSecret(status.message(), password) || rest.find(password) != std::string::npos,
          status.message());
    }
    return 0;
  }
  const internal::RedisEndpoint& e = *endpoint;
  BATON_FUZZ_CHECK(e.unix_socket.empty() ? !e.host.empty() : e.unix_socket.front() == '/', url);
  BATON_FUZZ_CHECK(e.port >= 1 && e.port <= 65535, std::to_string(e.port));
  BATON_FUZZ_CHECK(e.db >= 0 && e.db <= (1 << 20), std::to_string(e.db));
  return 0;
}

}  // namespace baton::fuzz

BATON_FUZZ_MAIN(baton::fuzz::FuzzRedisUrl)
