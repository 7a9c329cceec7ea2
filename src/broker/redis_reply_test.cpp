// Error replies become Status codes as contract/errors.json says: Baton's own codes and Redis'
// errors (OOM, READONLY, ...), each with its code and hint. Regression: a Redis error used to
// come out as kInternal.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "broker/redis_connection.h"

namespace baton::internal {
namespace {

Reply Error(std::string text) { return Reply{Reply::Type::kError, std::move(text), 0, {}}; }

TEST(RedisReply, EveryRedisErrorOfTheContractMapsToItsCodeWithTheHint) {
  std::ifstream in(std::string(BATON_CONTRACT_DIR) + "/errors.json");
  const auto errors = nlohmann::json::parse(in);
  ASSERT_FALSE(errors.at("redis_errors").empty());
  for (const auto& e : errors.at("redis_errors")) {
    const std::string prefix = e.at("prefix").get<std::string>();
    const Status s = StatusFromErrorReply(Error(prefix + " something happened"));
    EXPECT_EQ(StatusCodeName(s.code()), e.at("code").get<std::string>()) << prefix;
    EXPECT_NE(s.message().find(e.at("hint").get<std::string>()), std::string::npos) << prefix;
  }
}

TEST(RedisReply, RetryableCodes) {
  EXPECT_TRUE(IsRetryable(StatusFromErrorReply(Error("OOM command not allowed")).code()));
  EXPECT_TRUE(IsRetryable(StatusFromErrorReply(Error("READONLY You can't write")).code()));
  EXPECT_FALSE(IsRetryable(StatusFromErrorReply(Error("BATON_INVALID id: bad")).code()));
  EXPECT_FALSE(IsRetryable(StatusFromErrorReply(Error("ERR Function not found")).code()));
}

TEST(RedisReply, BatonCodesKeepTheirMessage) {
  const Status s = StatusFromErrorReply(Error("BATON_INVALID max_retry: must be an integer 0..25"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "max_retry: must be an integer 0..25");
  EXPECT_EQ(StatusFromErrorReply(Error("WRONGTYPE Operation")).code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace baton::internal
