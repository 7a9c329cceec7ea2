// RedisConnection: the single-node calls go straight to RedisNode (the hot path stays one
// hiredis pipeline); on a cluster, commands are kept until Flush() so ClusterConnection can
// route them and send them again when redirected.
#include "broker/redis_connection.h"

#include <utility>

#include "broker/cluster_connection.h"
#include "broker/redis_node.h"

namespace baton::internal {

RedisConnection::RedisConnection(RedisEndpoint endpoint, std::unique_ptr<RedisNode> node,
                                 std::unique_ptr<ClusterConnection> cluster)
    : endpoint_(std::move(endpoint)), node_(std::move(node)), cluster_(std::move(cluster)) {}

RedisConnection::~RedisConnection() = default;

StatusOr<std::unique_ptr<RedisConnection>> RedisConnection::Open(
    const RedisEndpoint& endpoint, std::optional<std::chrono::milliseconds> timeout) {
  const std::chrono::milliseconds effective = timeout.value_or(endpoint.timeout);
  if (endpoint.cluster()) {
    StatusOr<std::unique_ptr<ClusterConnection>> cluster =
        ClusterConnection::Open(endpoint, effective);
    if (!cluster.ok()) return cluster.status();
    return std::unique_ptr<RedisConnection>(
        new RedisConnection(endpoint, nullptr, std::move(*cluster)));
  }
  StatusOr<std::unique_ptr<RedisNode>> node = RedisNode::Open(endpoint, effective);
  if (!node.ok()) return node.status();
  return std::unique_ptr<RedisConnection>(new RedisConnection(endpoint, std::move(*node), nullptr));
}

StatusOr<Reply> RedisConnection::Command(const std::vector<std::string>& argv) {
  if (!cluster_) return node_->Command(argv);
  return CommandAt({}, argv);
}

StatusOr<Reply> RedisConnection::CommandAt(std::string_view route_key,
                                           const std::vector<std::string>& argv) {
  if (!cluster_) return node_->Command(argv);
  if (!cluster_pending_.empty()) {
    return Status::Internal("redis: Command() with " + std::to_string(cluster_pending_.size()) +
                            " pipelined commands not flushed; call Flush() first");
  }
  StatusOr<std::vector<Reply>> replies =
      cluster_->Run({argv}, route_key.empty() ? std::nullopt : std::optional(route_key),
                    std::chrono::milliseconds(0));
  if (!replies.ok()) return replies.status();
  return std::move(replies->front());
}

StatusOr<Reply> RedisConnection::BlockingCommand(const std::vector<std::string>& argv,
                                                 std::chrono::milliseconds timeout) {
  if (!cluster_) return node_->BlockingCommand(argv, timeout);
  Append(argv);
  StatusOr<std::vector<Reply>> replies = Flush(timeout);
  if (!replies.ok()) return replies.status();
  return std::move(replies->front());
}

void RedisConnection::Append(const std::vector<std::string>& argv) {
  if (!cluster_) return node_->Append(argv);
  cluster_pending_.push_back(argv);
}

StatusOr<std::vector<Reply>> RedisConnection::Flush(std::chrono::milliseconds block) {
  if (!cluster_) return node_->Flush(block);
  std::vector<std::vector<std::string>> commands = std::move(cluster_pending_);
  cluster_pending_.clear();
  if (commands.empty()) return std::vector<Reply>();
  return cluster_->Run(commands, std::nullopt, block);
}

size_t RedisConnection::pending() const {
  return cluster_ ? cluster_pending_.size() : node_->pending();
}

Status RedisConnection::Reconnect() {
  if (!cluster_) return node_->Reconnect();
  cluster_pending_.clear();
  return cluster_->Reconnect();
}

bool RedisConnection::broken() const { return cluster_ ? cluster_->broken() : node_->broken(); }

std::vector<std::string> RedisConnection::Nodes() const {
  if (!cluster_) return {""};
  return cluster_->Primaries();
}

StatusOr<Reply> RedisConnection::CommandOnNode(const std::string& node,
                                               const std::vector<std::string>& argv) {
  if (!cluster_) return node_->Command(argv);
  return cluster_->RunOnNode(node, argv);
}

}  // namespace baton::internal
