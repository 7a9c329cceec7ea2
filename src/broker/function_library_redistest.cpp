// The embedded functions library and the version handshake, against a real redis-server.
#include <gtest/gtest.h>

#include <string>

#include "broker/function_library.h"
#include "harness/redis_server.h"

namespace baton::internal {
namespace {

// A library named baton_v2 whose baton_v2_version answers "0": a mismatched build.
constexpr const char* kOldLibrary =
    "#!lua name=baton_v2\n"
    "redis.register_function{function_name='baton_v2_version', callback=function() return '0' "
    "end, flags={'no-writes'}}\n";

std::unique_ptr<RedisConnection> Open(const testing::RedisServer& server) {
  RedisEndpoint endpoint;
  endpoint.port = server.port();
  auto connection = RedisConnection::Open(endpoint);
  EXPECT_TRUE(connection.ok()) << connection.status().ToString();
  return connection.ok() ? std::move(connection).value() : nullptr;
}

TEST(FunctionLibrary, EmbeddedSourceIsTheBatonLibrary) {
  EXPECT_EQ(FunctionLibrarySource().rfind("#!lua name=baton_v2\n", 0), 0u);
  EXPECT_EQ(std::string(FunctionLibrarySource()), testing::FunctionLibrarySource());
}

TEST(FunctionLibrary, CheckWithoutTheLibrarySaysNone) {
  testing::RedisServer server;
  auto c = Open(server);
  ASSERT_NE(c, nullptr);
  Status status = CheckFunctionLibrary(*c);
  EXPECT_EQ(status.code(), StatusCode::kVersionMismatch);
  EXPECT_EQ(
      status.message(),
      "functions library version none loaded in Redis, this client needs 2: run 'baton init'");
}

TEST(FunctionLibrary, LoadThenCheck) {
  testing::RedisServer server;
  auto c = Open(server);
  ASSERT_NE(c, nullptr);
  std::string version;
  Status loaded = LoadFunctionLibrary(*c, &version);
  ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  EXPECT_EQ(version, kFunctionLibraryVersion);
  EXPECT_TRUE(CheckFunctionLibrary(*c).ok());
  // Loading again replaces the library.
  EXPECT_TRUE(LoadFunctionLibrary(*c).ok());
  EXPECT_EQ(server.String({"FCALL_RO", "baton_v2_version", "0"}), "2");
}

TEST(FunctionLibrary, OtherVersionIsAMismatchAndLoadReplacesIt) {
  testing::RedisServer server;
  server.Command({"FUNCTION", "LOAD", kOldLibrary});
  auto c = Open(server);
  ASSERT_NE(c, nullptr);
  Status status = CheckFunctionLibrary(*c);
  EXPECT_EQ(status.code(), StatusCode::kVersionMismatch);
  EXPECT_EQ(status.message(),
            "functions library version 0 loaded in Redis, this client needs 2: run 'baton init'");
  ASSERT_TRUE(LoadFunctionLibrary(*c).ok());
  EXPECT_TRUE(CheckFunctionLibrary(*c).ok());
}

// Rolling upgrade (docs/upgrading.md): v1 (library `baton`) stays loaded and callable beside v2.
TEST(FunctionLibrary, V2LoadsBesideV1) {
  testing::RedisServer server;
  server.Command({"FUNCTION", "LOAD", testing::LegacyV1LibrarySource()});
  auto c = Open(server);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(CheckFunctionLibrary(*c).code(), StatusCode::kVersionMismatch);
  ASSERT_TRUE(LoadFunctionLibrary(*c).ok());
  EXPECT_TRUE(CheckFunctionLibrary(*c).ok());
  EXPECT_EQ(server.String({"FCALL_RO", "baton_version", "0"}), "1");
  EXPECT_EQ(server.String({"FCALL_RO", "baton_v2_version", "0"}), "2");
}

TEST(FunctionLibrary, UnreachableRedisIsUnavailable) {
  testing::RedisServer server;
  auto c = Open(server);
  ASSERT_NE(c, nullptr);
  server.Kill();
  EXPECT_EQ(CheckFunctionLibrary(*c).code(), StatusCode::kUnavailable);
  EXPECT_EQ(LoadFunctionLibrary(*c).code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace baton::internal
