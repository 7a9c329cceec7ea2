// The users file, the password hashes and the sessions of the console.
#include "users.h"

#include <gtest/gtest.h>

#include "sessions.h"

namespace baton::console {
namespace {

std::string UsersJson(const std::string& name, const std::string& role, const std::string& hash) {
  return R"({"users": [{"name": ")" + name + R"(", "role": ")" + role + R"(", "password_hash": ")" +
         hash + R"("}]})";
}

TEST(UsersTest, AHashedPasswordAuthenticatesItsUserOnly) {
  auto hash = HashPassword("correct horse");
  ASSERT_TRUE(hash.ok()) << hash.status().ToString();
  EXPECT_TRUE(hash->starts_with("$argon2id$"));
  auto users = UserDirectory::Parse(UsersJson("ada", "operator", *hash));
  ASSERT_TRUE(users.ok()) << users.status().ToString();
  auto ada = users->Authenticate("ada", "correct horse");
  ASSERT_TRUE(ada.has_value());
  EXPECT_EQ(ada->role, Role::kOperator);
  EXPECT_FALSE(users->Authenticate("ada", "correct horse ").has_value());
  EXPECT_FALSE(users->Authenticate("ada", "").has_value());
  EXPECT_FALSE(users->Authenticate("bob", "correct horse").has_value());
}

TEST(UsersTest, TwoHashesOfOnePasswordDiffer) {
  auto a = HashPassword("same");
  auto b = HashPassword("same");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);  // salted
}

TEST(UsersTest, ABrokenFileNamesTheUserAndTheField) {
  auto hash = HashPassword("x");
  ASSERT_TRUE(hash.ok());
  struct Case {
    std::string text, expected;
  };
  const std::vector<Case> cases = {
      {"not json", "users file: is not valid JSON"},
      {R"({"users": {}})", "users: must be an array"},
      {R"({"users": []})", "users: must list at least one user"},
      {UsersJson("ada", "root", *hash), "users[0] (ada): role: must be viewer, operator or admin"},
      {UsersJson("ada", "admin", "plaintext"),
       "users[0] (ada): password_hash: must be an Argon2id"},
      {UsersJson("a d a", "admin", *hash), "users[0].name: must be 1 to 64"},
      {R"({"users": [{"name": "ada", "role": "admin", "password_hash": ")" + *hash +
           R"("}, {"name": "ada", "role": "viewer", "password_hash": ")" + *hash + R"("}]})",
       "users[1] (ada): name: appears twice"},
  };
  for (const auto& c : cases) {
    auto users = UserDirectory::Parse(c.text);
    ASSERT_FALSE(users.ok()) << c.text;
    EXPECT_EQ(users.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(users.status().message().find(c.expected), std::string::npos)
        << users.status().message();
  }
}

TEST(SessionsTest, ASessionEndsAfterItsIdleLimitAndOnLogout) {
  SessionStore sessions(std::chrono::minutes(1));
  ConsoleUser ada{"ada", Role::kAdmin, ""};
  const std::string token = sessions.Create(ada, 1000);
  EXPECT_EQ(token.size(), 64u);
  auto s = sessions.Touch(token, 50000);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->user, "ada");
  EXPECT_EQ(s->csrf.size(), 64u);
  EXPECT_NE(s->csrf, token);
  EXPECT_TRUE(sessions.Touch(token, 50000 + 60000).has_value());    // refreshed at 50000
  EXPECT_FALSE(sessions.Touch(token, 110000 + 60001).has_value());  // idle too long
  const std::string other = sessions.Create(ada, 200000);
  EXPECT_NE(other, token);
  sessions.Remove(other);
  EXPECT_FALSE(sessions.Touch(other, 200001).has_value());
  EXPECT_FALSE(sessions.Touch("", 200001).has_value());
}

TEST(SessionsTest, FiveFailuresLockANameForFiveMinutes) {
  LoginThrottle throttle;
  for (int i = 0; i < LoginThrottle::kMaxFailures - 1; ++i) throttle.Failed("ada", 1000 + i);
  EXPECT_EQ(throttle.RetryAfterMs("ada", 2000), 0);
  throttle.Failed("ada", 2000);
  EXPECT_EQ(throttle.RetryAfterMs("ada", 2000), LoginThrottle::kWindowMs);
  EXPECT_EQ(throttle.RetryAfterMs("bob", 2000), 0);  // per name
  EXPECT_EQ(throttle.RetryAfterMs("ada", 2000 + LoginThrottle::kWindowMs), 0);
  // Failures spread wider than the window never lock.
  LoginThrottle slow;
  for (int i = 0; i < 10; ++i) slow.Failed("ada", i * LoginThrottle::kWindowMs);
  EXPECT_EQ(slow.RetryAfterMs("ada", 10 * LoginThrottle::kWindowMs), 0);
}

}  // namespace
}  // namespace baton::console
