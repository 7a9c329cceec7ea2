// An array header over kMaxReplyArrayElements fails the read as a protocol error that says so,
// before hiredis allocates for it. Regression: the resp_reply fuzzer's "*933333333" made hiredis
// ask for 7 GB. The server here is a fake on a Unix socket: no Redis would send such a reply.
#include "broker/reply_guard.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <string>
#include <thread>

#include "broker/redis_connection.h"
#include "harness/unix_listener.h"

namespace baton::internal {
namespace {

// Accepts one connection, reads the PING of RedisConnection::Open, writes `answer` (PONG and the
// replies after it), then drains the socket until the client closes.
class OneAnswerServer {
 public:
  explicit OneAnswerServer(std::string answer)
      : answer_(std::move(answer)),
        listener_(testing::ListenOnUnixSocket("baton-reply-guard", 1)),
        thread_([this] { Serve(); }) {}
  ~OneAnswerServer() {
    thread_.join();
    close(listener_.fd);
    std::filesystem::remove_all(listener_.dir);
  }
  const std::string& path() const { return listener_.path; }

 private:
  void Serve() {
    const int fd = accept(listener_.fd, nullptr, nullptr);
    if (fd < 0) return;
    std::array<char, 4096> buffer{};
    (void)read(fd, buffer.data(), buffer.size());  // the PING
    (void)send(fd, answer_.data(), answer_.size(), MSG_NOSIGNAL);
    while (read(fd, buffer.data(), buffer.size()) > 0) {
    }
    close(fd);
  }

  std::string answer_;
  testing::UnixListener listener_;
  std::thread thread_;  // last: it starts serving once the rest is set
};

StatusOr<Reply> AskOnce(const OneAnswerServer& server) {
  RedisEndpoint endpoint;
  endpoint.unix_socket = server.path();
  endpoint.timeout = std::chrono::milliseconds(2000);
  auto connection = RedisConnection::Open(endpoint);
  if (!connection.ok()) return connection.status();
  return (*connection)->Command({"GET", "k"});
}

TEST(ReplyGuard, AnArrayHeaderOverTheLimitFailsTheReadNamingTheLimit) {
  OneAnswerServer server("+PONG\r\n*933333333\r\n");
  const StatusOr<Reply> reply = AskOnce(server);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(reply.status().message().find("a reply array of 933333333 elements is over the limit "
                                          "of 16777216"),
            std::string::npos)
      << reply.status().ToString();
}

TEST(ReplyGuard, ANestedArrayOverTheLimitIsRefusedToo) {
  OneAnswerServer server("+PONG\r\n*2\r\n$1\r\na\r\n*16777217\r\n");
  const StatusOr<Reply> reply = AskOnce(server);
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.status().message().find("16777217 elements"), std::string::npos)
      << reply.status().ToString();
}

TEST(ReplyGuard, ArraysUpToTheLimitAreReadAsBefore) {
  OneAnswerServer server("+PONG\r\n*2\r\n$1\r\na\r\n*1\r\n:7\r\n");
  const StatusOr<Reply> reply = AskOnce(server);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_EQ(reply->elements.size(), 2u);
  EXPECT_EQ(reply->elements[0].str, "a");
  ASSERT_EQ(reply->elements[1].elements.size(), 1u);
  EXPECT_EQ(reply->elements[1].elements[0].integer, 7);
}

}  // namespace
}  // namespace baton::internal
