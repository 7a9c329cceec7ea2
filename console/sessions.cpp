#include "sessions.h"

#include <sodium.h>

namespace baton::console {

std::string RandomToken() {
  unsigned char bytes[32];
  randombytes_buf(bytes, sizeof bytes);
  char hex[sizeof bytes * 2 + 1];
  sodium_bin2hex(hex, sizeof hex, bytes, sizeof bytes);
  return std::string(hex, sizeof bytes * 2);
}

std::string SessionStore::Create(const ConsoleUser& user, std::int64_t now_ms) {
  std::string token = RandomToken();
  Session session{user.name, user.role, RandomToken(), now_ms};
  std::lock_guard<std::mutex> lock(mu_);
  // Forget sessions that expired without a later request, so the map does not grow forever.
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    it = now_ms - it->second.last_used_ms > idle_limit_.count() ? sessions_.erase(it) : ++it;
  }
  sessions_.emplace(token, std::move(session));
  return token;
}

std::optional<Session> SessionStore::Touch(std::string_view token, std::int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(token);
  if (it == sessions_.end()) return std::nullopt;
  if (now_ms - it->second.last_used_ms > idle_limit_.count()) {
    sessions_.erase(it);
    return std::nullopt;
  }
  it->second.last_used_ms = now_ms;
  return it->second;
}

bool SessionStore::Alive(std::string_view token, std::int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(token);
  return it != sessions_.end() && now_ms - it->second.last_used_ms <= idle_limit_.count();
}

void SessionStore::Remove(std::string_view token) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = sessions_.find(token); it != sessions_.end()) sessions_.erase(it);
}

std::size_t SessionStore::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

std::int64_t LoginThrottle::Begin(std::string_view name, std::int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(name);
  if (it == records_.end()) {
    // Bound the table: names are attacker-chosen (entries with nothing in flight can go).
    if (records_.size() > 100000) {
      std::erase_if(records_, [](const auto& r) { return r.second.in_flight == 0; });
    }
    it = records_.emplace(std::string(name), Record{}).first;
  }
  Record& r = it->second;
  if (r.locked_until_ms > now_ms) return r.locked_until_ms - now_ms;
  if (now_ms - r.first_ms > kWindowMs) {
    r.failures = 0;
    r.first_ms = now_ms;
  }
  // Every attempt still running may fail: together with the failures so far they must stay
  // below the limit.
  if (r.failures + r.in_flight >= kMaxFailures) return 1000;
  ++r.in_flight;
  return 0;
}

void LoginThrottle::Failed(std::string_view name, std::int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(name);
  if (it == records_.end()) return;
  Record& r = it->second;
  if (r.in_flight > 0) --r.in_flight;
  if (now_ms - r.first_ms > kWindowMs) {
    r.failures = 0;
    r.first_ms = now_ms;
  }
  if (++r.failures >= kMaxFailures) {
    r.locked_until_ms = now_ms + kWindowMs;
    r.failures = 0;
    r.first_ms = now_ms;
  }
}

void LoginThrottle::Succeeded(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = records_.find(name);
  if (it == records_.end()) return;
  if (it->second.in_flight > 0) --it->second.in_flight;
  it->second.failures = 0;
  if (it->second.in_flight == 0) records_.erase(it);
}

}  // namespace baton::console
