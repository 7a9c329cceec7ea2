#include "harness/redis_server.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "broker/redis_connection.h"
#include "inspect/task_record.h"

namespace baton::testing {

namespace {
const char kLibrarySource[] =
#include "function_library_source.inc"
    ;
}  // namespace

std::string FunctionLibrarySource() { return kLibrarySource; }

std::string LegacyV1LibrarySource() {
  std::ifstream in(std::string(BATON_SOURCE_DIR) + "/contract/legacy/baton_v1.lua");
  if (!in) throw std::runtime_error("contract/legacy/baton_v1.lua not found");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

RedisServer::RedisServer(std::vector<std::string> extra_args) {
  // Another test may grab the port between FreeLoopbackPort() and redis' bind(): retry.
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = FreeLoopbackPort();
    std::vector<std::string> argv = {"redis-server", "--port",    std::to_string(port_),
                                     "--bind",       "127.0.0.1", "--dir",
                                     dir_.path(),    "--save",    "",
                                     "--appendonly", "no",        "--daemonize",
                                     "no",           "--logfile", dir_.path() + "/redis.log"};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    process_ = std::make_unique<Process>(argv);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline && process_->Running()) {
      timeval tv{1, 0};
      redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
      if (c && !c->err) {
        ReplyPtr r(static_cast<redisReply*>(redisCommand(c, "PING")));
        // A server started with --requirepass answers NOAUTH: it is up all the same.
        if (r && (r->type == REDIS_REPLY_STATUS ||
                  (r->type == REDIS_REPLY_ERROR && std::string(r->str).rfind("NOAUTH", 0) == 0))) {
          ctx_ = c;
          return;
        }
      }
      if (c) redisFree(c);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    process_->Kill();
  }
  throw std::runtime_error("could not start redis-server");
}

RedisServer::~RedisServer() {
  if (ctx_) redisFree(ctx_);
  if (process_) process_->Kill();
}

void RedisServer::Kill() {
  if (process_) process_->Kill();
}

ReplyPtr RedisServer::Command(const std::vector<std::string>& argv) {
  std::vector<const char*> args;
  std::vector<size_t> lens;
  for (auto& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(
      redisCommandArgv(ctx_, static_cast<int>(args.size()), args.data(), lens.data()));
  if (!r) throw std::runtime_error(std::string("redis: ") + ctx_->errstr);
  return ReplyPtr(r);
}

long long RedisServer::Integer(const std::vector<std::string>& argv) {
  auto r = Command(argv);
  if (r->type != REDIS_REPLY_INTEGER) throw std::runtime_error("not an integer reply");
  return r->integer;
}

std::string RedisServer::String(const std::vector<std::string>& argv) {
  auto r = Command(argv);
  if (r->type == REDIS_REPLY_NIL) return "";
  if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS &&
      r->type != REDIS_REPLY_ERROR)
    throw std::runtime_error("not a string reply");
  return std::string(r->str, r->len);
}

nlohmann::json RedisServer::ErrorHistory(const std::string& errors_key, const std::string& id) {
  auto endpoint = internal::RedisEndpoint::Parse(url());
  if (!endpoint.ok()) throw std::runtime_error(endpoint.status().ToString());
  auto conn = internal::RedisConnection::Open(*endpoint);
  if (!conn.ok()) throw std::runtime_error(conn.status().ToString());
  auto history = internal::ReadErrorHistory(**conn, errors_key, id);
  if (!history.ok()) throw std::runtime_error(history.status().ToString());
  return internal::ErrorsToJson(*history);
}

void RedisServer::LoadFunctions() {
  auto r = Command({"FUNCTION", "LOAD", "REPLACE", FunctionLibrarySource()});
  if (r->type == REDIS_REPLY_ERROR)
    throw std::runtime_error("FUNCTION LOAD: " + std::string(r->str));
}

}  // namespace baton::testing
