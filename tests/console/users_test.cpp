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
  for (int i = 0; i < LoginThrottle::kMaxFailures - 1; ++i) {
    ASSERT_EQ(throttle.Begin("ada", 1000 + i), 0);
    throttle.Failed("ada", 1000 + i);
  }
  ASSERT_EQ(throttle.Begin("ada", 2000), 0);  // the fifth try may go on
  throttle.Failed("ada", 2000);
  EXPECT_EQ(throttle.Begin("ada", 2000), LoginThrottle::kWindowMs);  // even the right password
  EXPECT_EQ(throttle.Begin("bob", 2000), 0);                         // per name
  throttle.Succeeded("bob");
  EXPECT_EQ(throttle.Begin("ada", 2000 + LoginThrottle::kWindowMs), 0);
  throttle.Succeeded("ada");
  // Failures spread wider than the window never lock.
  LoginThrottle slow;
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(slow.Begin("ada", i * LoginThrottle::kWindowMs), 0) << i;
    slow.Failed("ada", i * LoginThrottle::kWindowMs);
  }
}

TEST(SessionsTest, ParallelGuessesCannotPassTheLimit) {
  LoginThrottle throttle;
  int started = 0;
  for (int i = 0; i < 30; ++i) {
    if (throttle.Begin("ops", 1000) == 0) ++started;  // 30 at once, none finished yet
  }
  EXPECT_EQ(started, LoginThrottle::kMaxFailures);
  for (int i = 0; i < started; ++i) throttle.Failed("ops", 1001);
  EXPECT_EQ(throttle.Begin("ops", 1002), LoginThrottle::kWindowMs - 1);
  // A success frees its slot and clears the failures.
  LoginThrottle ok;
  ASSERT_EQ(ok.Begin("ada", 0), 0);
  ok.Failed("ada", 0);
  ASSERT_EQ(ok.Begin("ada", 1), 0);
  ok.Succeeded("ada");
  for (int i = 0; i < LoginThrottle::kMaxFailures - 1; ++i) {
    ASSERT_EQ(ok.Begin("ada", 2), 0);
    ok.Failed("ada", 2);
  }
  EXPECT_EQ(ok.Begin("ada", 3), 0);
}

}  // namespace
}  // namespace baton::console
