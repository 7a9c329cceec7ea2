#pragma once
// Logged-in sessions and the login throttle (docs/console.md "Sessions and CSRF"). Sessions live
// in memory: a restart of the console logs everyone out.
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "users.h"

namespace baton::console {

struct Session {
  std::string user;
  Role role = Role::kViewer;
  std::string csrf;  // sent back in X-CSRF-Token on every POST
  std::int64_t last_used_ms = 0;
};

class SessionStore {
 public:
  explicit SessionStore(std::chrono::milliseconds idle_limit) : idle_limit_(idle_limit) {}

  // A new session; returns its cookie token (256 random bits, hex).
  std::string Create(const ConsoleUser& user, std::int64_t now_ms);
  // The session of `token`, refreshed; nullopt when unknown or idle past the limit (then removed).
  std::optional<Session> Touch(std::string_view token, std::int64_t now_ms);
  // Whether the session still exists and is within its idle limit, without refreshing it (an open
  // live stream does not keep a session alive).
  bool Alive(std::string_view token, std::int64_t now_ms);
  void Remove(std::string_view token);
  std::size_t size();

 private:
  std::chrono::milliseconds idle_limit_;
  std::mutex mu_;
  std::map<std::string, Session, std::less<>> sessions_;
};

// After kMaxFailures failed logins of one name within kWindow, that name is refused for kWindow.
// Attempts in progress count too, so parallel guesses cannot slip past the limit while their
// password checks (Argon2, slow on purpose) are still running.
class LoginThrottle {
 public:
  static constexpr int kMaxFailures = 5;
  static constexpr std::int64_t kWindowMs = 5 * 60 * 1000;

  // Starts an attempt: 0 when it may go on (then call Failed() or Succeeded() once), else the
  // milliseconds until `name` may try again.
  std::int64_t Begin(std::string_view name, std::int64_t now_ms);
  void Failed(std::string_view name, std::int64_t now_ms);
  void Succeeded(std::string_view name);

 private:
  struct Record {
    int failures = 0;
    int in_flight = 0;
    std::int64_t first_ms = 0;
    std::int64_t locked_until_ms = 0;
  };
  std::mutex mu_;
  std::map<std::string, Record, std::less<>> records_;
};

// 256 random bits from libsodium, as 64 hex digits.
std::string RandomToken();

}  // namespace baton::console
