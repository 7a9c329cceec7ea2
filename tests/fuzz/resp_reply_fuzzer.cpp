// Redis replies (RESP bytes) as Baton reads them: the input is what a server answers on a real
// socket. An in-process fake server on a Unix socket answers RedisConnection::Open's PING and
// then a pipeline of three commands with the input bytes, then closes its side; hiredis' reader
// parses them and RedisConnection turns them into Reply trees (its real code path: ReadReply,
// CopyReply, Flush). Each reply is then handed to Baton's reply readers: error mapping, integer
// and text accessors, baton_dequeue entries, stream entries, enqueue results, namespace settings,
// lease lengths, field maps, stored records. Properties:
//  - no input crashes, hangs or leaks; a broken or truncated reply is kUnavailable;
//  - no input makes hiredis allocate for a huge array header (reply_guard.h): libFuzzer's
//    malloc limit catches one (regression: "*933333333" asked for 7 GB);
//  - an error reply always maps to a non-OK Status, any other reply never does;
//  - the readers answer every shape with a value or a Status, never by reading out of bounds.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "broker/enqueue_call.h"
#include "broker/namespace_settings.h"
#include "broker/redis_connection.h"
#include "broker/task_codec.h"
#include "fuzz_check.h"
#include "fuzz_targets.h"
#include "harness/unix_listener.h"
#include "inspect/inspector_core.h"
#include "inspect/lease_scan.h"
#include "inspect/task_record.h"

namespace baton::fuzz {
namespace {

using internal::Reply;

// Answers every connection with the current bytes: reads the client's PING, writes the bytes,
// shuts its side for writing (the client sees the end of the stream after them) and drains what
// the client sends until it closes. One connection at a time; lives for the whole process.
class FakeRedis {
 public:
  static FakeRedis& Instance() {
    static FakeRedis* server = new FakeRedis();  // never destroyed: its thread runs to the end
    return *server;
  }
  const std::string& socket_path() const { return listener_.path; }
  void SetAnswer(std::string_view bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    answer_.assign(bytes);
  }

 private:
  FakeRedis() : listener_(testing::ListenOnUnixSocket("baton-resp-fuzz", 4)) {
    std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the process
    std::thread([this] { Serve(); }).detach();
    std::atexit([] {
      const testing::UnixListener& listener = Instance().listener_;
      unlink(listener.path.c_str());
      rmdir(listener.dir.c_str());
    });
  }

  void Serve() {
    // The PING of RedisConnection::Open, as hiredis writes it.
    constexpr std::string_view kPing = "*1\r\n$4\r\nPING\r\n";
    std::array<char, 4096> buffer{};
    while (true) {
      const int fd = accept(listener_.fd, nullptr, nullptr);
      if (fd < 0) continue;
      std::string answer;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        answer = answer_;
      }
      std::size_t got = 0;
      while (got < kPing.size()) {
        const ssize_t n = read(fd, buffer.data(), kPing.size() - got);
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
      }
      std::size_t sent = 0;
      while (sent < answer.size()) {
        const ssize_t n = send(fd, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<std::size_t>(n);
      }
      shutdown(fd, SHUT_WR);
      while (read(fd, buffer.data(), buffer.size()) > 0) {
      }
      close(fd);
    }
  }

  testing::UnixListener listener_;
  std::mutex mutex_;
  std::string answer_;
};

// The readers of libbaton that take a reply, each on `reply` (and `next`, the reply after it,
// where a reader takes two).
void ReadWithEveryReader(const Reply& reply, const Reply& next) {
  (void)reply.AsString();
  (void)reply.AsInteger();
  const Status mapped =
      reply.is_error() ? internal::StatusFromErrorReply(reply) : internal::ReplyStatus(reply);
  BATON_FUZZ_CHECK(mapped.ok() == !reply.is_error(), mapped.ToString());
  (void)internal::ScoreMs(reply);

  (void)internal::ParseNamespaceSettings(reply);
  (void)internal::ParseLeaseLengths(reply, next);
  const auto fields = internal::FieldMap(reply);
  (void)internal::FieldText(fields, "task");
  (void)internal::FieldInt(fields, "length");
  (void)internal::BodyFromEntry(reply);
  (void)internal::EntryTaskId(reply);
  (void)internal::ParseEndedRecord(reply.str);
  (void)internal::ParseStoredBody(reply.str);

  std::string sid, id, attempt;
  (void)internal::DecodeDequeuedEntry("shop", "mail", reply, 0, &sid, &id);
  (void)internal::DecodeStreamEntry("shop", "mail", "1-0", reply, &id, &attempt);

  // baton_enqueue's reply for a call of as many tasks as the reply has result pairs.
  const std::size_t tasks = std::min<std::size_t>(reply.elements.size() / 2, 8);
  std::vector<internal::EnqueueItem> items(tasks == 0 ? 1 : tasks);
  internal::EnqueueCall call{"shop", "mail", {}};
  for (std::size_t i = 0; i < items.size(); ++i) call.items.push_back(i);
  std::vector<EnqueueResult> results(items.size());
  const Status read = internal::ReadEnqueueReply(reply, call, items, &results);
  BATON_FUZZ_CHECK(!reply.is_error() || !read.ok(), read.ToString());

  for (const Reply& element : reply.elements) ReadWithEveryReader(element, next);
}

}  // namespace

int FuzzRespReply(const std::uint8_t* data, std::size_t size) {
  FakeRedis& server = FakeRedis::Instance();
  server.SetAnswer(AsText(data, size));
  internal::RedisEndpoint endpoint;
  endpoint.unix_socket = server.socket_path();
  endpoint.timeout = std::chrono::milliseconds(5000);

  // The first reply answers Open's PING: an error reply fails Open, naming it.
  StatusOr<std::unique_ptr<internal::RedisConnection>> connection =
      internal::RedisConnection::Open(endpoint);
  if (!connection.ok()) {
    BATON_FUZZ_CHECK(connection.status().code() == StatusCode::kUnavailable,
                     connection.status().ToString());
    return 0;
  }
  internal::RedisConnection& redis = **connection;
  for (int i = 0; i < 3; ++i) redis.Append({"GET", "k" + std::to_string(i)});
  StatusOr<std::vector<Reply>> replies = redis.Flush();
  if (!replies.ok()) {
    BATON_FUZZ_CHECK(replies.status().code() == StatusCode::kUnavailable && redis.broken(),
                     replies.status().ToString());
    StatusOr<Reply> after = redis.Command({"PING"});
    BATON_FUZZ_CHECK(!after.ok(), "a broken connection answered");
    return 0;
  }
  BATON_FUZZ_CHECK(replies->size() == 3, std::to_string(replies->size()));
  for (std::size_t i = 0; i < replies->size(); ++i) {
    ReadWithEveryReader((*replies)[i], (*replies)[(i + 1) % replies->size()]);
  }
  return 0;
}

}  // namespace baton::fuzz

BATON_FUZZ_MAIN(baton::fuzz::FuzzRespReply)
