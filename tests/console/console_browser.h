#pragma once
// Helpers shared by the console's end-to-end tests: a users file with one user per role, a
// logged-in HTTP client (cookie jar + CSRF token), and waiting for a condition.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "users.h"

namespace baton::console {

inline bool WaitUntil(const std::function<bool()>& done,
                      std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

// Writes the users file of a test into `dir`: one user per role, password "<name>-pw".
inline std::string UsersFile(const std::string& dir) {
  const std::string path = dir + "/users.json";
  nlohmann::json users = nlohmann::json::array();
  for (const char* role : {"viewer", "operator", "admin"}) {
    auto hash = HashPassword(std::string(role) + "-pw");
    EXPECT_TRUE(hash.ok());
    users.push_back({{"name", role}, {"role", role}, {"password_hash", *hash}});
  }
  std::ofstream(path) << nlohmann::json{{"users", users}}.dump();
  return path;
}

// One HTTP client with its own cookie jar (one logged-in browser).
class Browser {
 public:
  explicit Browser(int port) : http_("127.0.0.1", port) { http_.set_read_timeout(10); }

  httplib::Result Login(const std::string& user, const std::string& password) {
    auto res =
        http_.Post("/api/login", nlohmann::json{{"user", user}, {"password", password}}.dump(),
                   "application/json");
    if (res && res->status == 200) {
      const std::string cookie = res->get_header_value("Set-Cookie");
      cookie_ = cookie.substr(0, cookie.find(';'));
      csrf_ = nlohmann::json::parse(res->body)["csrf"];
    }
    return res;
  }
  httplib::Result Get(const std::string& path) { return http_.Get(path, Headers(false)); }
  httplib::Result Post(const std::string& path, const nlohmann::json& body, bool with_csrf = true,
                       httplib::Headers extra = {}) {
    httplib::Headers headers = Headers(with_csrf);
    headers.insert(extra.begin(), extra.end());
    return http_.Post(path, headers, body.dump(), "application/json");
  }
  httplib::Client& http() { return http_; }
  const std::string& cookie() const { return cookie_; }

 private:
  httplib::Headers Headers(bool with_csrf) const {
    httplib::Headers h;
    if (!cookie_.empty()) h.emplace("Cookie", cookie_);
    if (with_csrf && !csrf_.empty()) h.emplace("X-CSRF-Token", csrf_);
    return h;
  }
  httplib::Client http_;
  std::string cookie_, csrf_;
};

// The JSON body of an answer (null when there was no answer, discarded when it is not JSON).
inline nlohmann::json Body(const httplib::Result& res) {
  return res ? nlohmann::json::parse(res->body, nullptr, false) : nlohmann::json(nullptr);
}

}  // namespace baton::console
