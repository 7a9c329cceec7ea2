#include "baton/status.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

namespace baton {
namespace {

TEST(Status, OkByDefault) {
  Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.ToString(), "ok");
  EXPECT_TRUE(status.WithContext("enqueue").ok());
}

TEST(Status, InvalidArgumentNamesFieldAndRule) {
  Status status = Status::InvalidArgument("max_retry", "must be an integer 0..25 (got 99)");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "max_retry: must be an integer 0..25 (got 99)");
  EXPECT_EQ(status.ToString(), "invalid_argument: max_retry: must be an integer 0..25 (got 99)");
  Status with_context = status.WithContext("enqueue");
  EXPECT_EQ(with_context.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with_context.message(), "enqueue: max_retry: must be an integer 0..25 (got 99)");
}

TEST(Status, CodeNamesMatchContractErrors) {
  EXPECT_EQ(StatusCodeName(StatusCode::kOk), "ok");
  EXPECT_EQ(StatusCodeName(StatusCode::kInvalidArgument), "invalid_argument");
  EXPECT_EQ(StatusCodeName(StatusCode::kNotFound), "not_found");
  EXPECT_EQ(StatusCodeName(StatusCode::kConflict), "conflict");
  EXPECT_EQ(StatusCodeName(StatusCode::kAlreadyExists), "already_exists");
  EXPECT_EQ(StatusCodeName(StatusCode::kVersionMismatch), "version_mismatch");
  EXPECT_EQ(StatusCodeName(StatusCode::kUnavailable), "unavailable");
  EXPECT_EQ(StatusCodeName(StatusCode::kDeadlineExceeded), "deadline_exceeded");
  EXPECT_EQ(StatusCodeName(StatusCode::kCancelled), "cancelled");
  EXPECT_EQ(StatusCodeName(StatusCode::kInternal), "internal");
}

// Every code of contract/errors.json is a StatusCode with the same name.
TEST(Status, EveryContractErrorCodeExists) {
  std::ifstream in(std::string(BATON_CONTRACT_DIR) + "/errors.json");
  const auto errors = nlohmann::json::parse(in);
  std::set<std::string> names;
  for (int c = static_cast<int>(StatusCode::kOk); c <= static_cast<int>(StatusCode::kInternal);
       ++c) {
    names.insert(std::string(StatusCodeName(static_cast<StatusCode>(c))));
  }
  ASSERT_FALSE(errors.at("codes").empty());
  for (const auto& code : errors.at("codes")) {
    EXPECT_EQ(names.count(code.at("code").get<std::string>()), 1u) << code.dump();
  }
}

TEST(StatusOr, HoldsValueOrStatus) {
  StatusOr<int> value(7);
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, 7);
  StatusOr<int> error(Status::NotFound("task x"));
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.status().ToString(), "not_found: task x");
}

}  // namespace
TEST(StatusOrTest, ValueOfAnErrorDiesLoudlyInEveryBuild) {
  StatusOr<int> missing = Status::NotFound("task t-1");
  // Not an assert: this holds in release builds too (NDEBUG), with the error in the message.
  EXPECT_DEATH((void)missing.value(),
               "StatusOr::value\\(\\) called on an error: not_found: task t-1");
}

TEST(StatusOrTest, AnOkStatusWithoutAValueBecomesAnError) {
  StatusOr<int> odd = Status::Ok();
  EXPECT_FALSE(odd.ok());
  EXPECT_EQ(odd.status().code(), StatusCode::kInternal);
}

}  // namespace baton
