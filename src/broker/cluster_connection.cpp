// Routing and redirection for Redis Cluster (https://redis.io/docs/reference/cluster-spec/).
// A pipeline is cut into units: a lone command, or a transaction from WATCH or MULTI to its EXEC
// or DISCARD. Each unit is sent whole to one primary, and a unit that comes back redirected is
// sent again whole, so a transaction never spans nodes.
#include "broker/cluster_connection.h"

#include <algorithm>
#include <cctype>
#include <thread>
#include <utility>

#include "broker/cluster_slot.h"

namespace baton::internal {
namespace {

// Redirections and retries of one Run(). MOVED needs one more round; TRYAGAIN and CLUSTERDOWN
// (a failover in progress) are retried with a growing pause, about 3 s in all.
constexpr int kMaxRounds = 8;
constexpr std::chrono::milliseconds kFirstPause{25};
constexpr std::chrono::milliseconds kMaxPause{800};

enum class Redirect { kNone, kMoved, kAsk, kRetryLater };

// "MOVED 3999 127.0.0.1:6381", "ASK 3999 127.0.0.1:6381", "TRYAGAIN ...", "CLUSTERDOWN ...".
Redirect RedirectOf(const Reply& reply, NodeAddress* target) {
  if (!reply.is_error()) return Redirect::kNone;
  const std::string& text = reply.str;
  const bool moved = text.rfind("MOVED ", 0) == 0;
  const bool ask = text.rfind("ASK ", 0) == 0;
  if (moved || ask) {
    const std::size_t space = text.rfind(' ');
    StatusOr<NodeAddress> address = ParseNodeAddress(std::string_view(text).substr(space + 1));
    if (!address.ok()) return Redirect::kNone;  // not a redirection Baton understands: as is
    *target = *address;
    return moved ? Redirect::kMoved : Redirect::kAsk;
  }
  if (text.rfind("TRYAGAIN", 0) == 0 || text.rfind("CLUSTERDOWN", 0) == 0) {
    return Redirect::kRetryLater;
  }
  return Redirect::kNone;
}

std::string Upper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

NodeAddress SeedAddress(const RedisSeed& seed) { return NodeAddress{seed.host, seed.port}; }

}  // namespace

struct ClusterConnection::Unit {
  std::size_t first = 0;  // commands [first, first + count)
  std::size_t count = 0;
  int slot = -1;                   // -1: keyless
  std::optional<NodeAddress> ask;  // an ASK redirection: once to this node, after ASKING
};

StatusOr<std::unique_ptr<ClusterConnection>> ClusterConnection::Open(
    const RedisEndpoint& endpoint, std::chrono::milliseconds timeout) {
  std::unique_ptr<ClusterConnection> connection(new ClusterConnection(endpoint, timeout));
  if (Status s = connection->RefreshSlotMap(); !s.ok()) return s;
  return connection;
}

Status ClusterConnection::Broken(Status status) {
  broken_reason_ = status.message();
  return status;
}

StatusOr<RedisNode*> ClusterConnection::NodeAt(const NodeAddress& address) {
  const std::string name = address.ToString();
  auto it = nodes_.find(name);
  if (it != nodes_.end() && !it->second->broken()) return it->second.get();
  StatusOr<std::unique_ptr<RedisNode>> opened =
      RedisNode::Open(endpoint_.Node(address.host, address.port), timeout_);
  if (!opened.ok()) return opened.status();
  RedisNode* node = opened->get();
  nodes_[name] = std::move(*opened);
  return node;
}

StatusOr<SlotMap> ClusterConnection::ReadSlotMap(RedisNode& node, const NodeAddress& address) {
  StatusOr<Reply> reply = node.Command({"CLUSTER", "SHARDS"});
  if (!reply.ok()) return reply.status();
  if (reply->is_error() && Upper(reply->str).find("UNKNOWN SUBCOMMAND") != std::string::npos) {
    reply = node.Command({"CLUSTER", "SLOTS"});  // Redis before 7.0
    if (!reply.ok()) return reply.status();
    if (!reply->is_error()) return SlotMapFromSlots(*reply, address);
  }
  if (reply->is_error()) {
    if (reply->str.find("cluster support disabled") != std::string::npos) {
      return Status::InvalidArgument(
          "redis_url", "redis+cluster:// names " + address.ToString() +
                           ", which is not a cluster node (use redis:// for a single Redis)");
    }
    return Status::Unavailable("redis " + address.ToString() + ": CLUSTER SHARDS: " + reply->str);
  }
  return SlotMapFromShards(*reply, address);
}

Status ClusterConnection::RefreshSlotMap() {
  // Ask the primaries already known first (they are the most likely to be current), then the
  // seeds of the URL.
  std::vector<NodeAddress> candidates = slots_.primaries();
  for (const RedisSeed& seed : endpoint_.cluster_seeds) {
    const NodeAddress address = SeedAddress(seed);
    if (std::find(candidates.begin(), candidates.end(), address) == candidates.end()) {
      candidates.push_back(address);
    }
  }
  Status last = Status::Unavailable("redis cluster: no seed node");
  for (const NodeAddress& address : candidates) {
    StatusOr<RedisNode*> node = NodeAt(address);
    if (!node.ok()) {
      last = node.status();
      continue;
    }
    StatusOr<SlotMap> map = ReadSlotMap(**node, address);
    if (!map.ok()) {
      if (map.status().code() == StatusCode::kInvalidArgument) return map.status();
      last = map.status();
      continue;
    }
    if (map->primaries().empty()) {
      last = Status::Unavailable("redis cluster: " + address.ToString() + " knows no primary");
      continue;
    }
    slots_ = std::move(*map);
    // Connections to nodes that serve no slot now (a demoted primary, a removed node) go.
    const std::vector<std::string> keep = Primaries();
    std::erase_if(nodes_, [&](const auto& entry) {
      return std::find(keep.begin(), keep.end(), entry.first) == keep.end();
    });
    return Status::Ok();
  }
  return Status::Unavailable(
      "redis cluster: cannot read the slot map from any node (last: " + last.message() + ")");
}

Status ClusterConnection::Reconnect() {
  std::erase_if(nodes_, [](const auto& entry) { return entry.second->broken(); });
  Status status = RefreshSlotMap();
  if (status.ok()) broken_reason_.clear();
  return status;
}

std::vector<std::string> ClusterConnection::Primaries() const {
  std::vector<std::string> names;
  for (const NodeAddress& address : slots_.primaries()) names.push_back(address.ToString());
  return names;
}

StatusOr<Reply> ClusterConnection::RunOnNode(const std::string& node,
                                             const std::vector<std::string>& argv) {
  if (broken()) return Status::Unavailable("redis cluster: " + broken_reason_ + "; Reconnect()");
  StatusOr<NodeAddress> address = ParseNodeAddress(node);
  if (!address.ok()) return address.status();
  StatusOr<RedisNode*> target = NodeAt(*address);
  if (!target.ok()) return Broken(target.status());
  StatusOr<Reply> reply = (*target)->Command(argv);
  if (!reply.ok()) return Broken(reply.status());
  return reply;
}

StatusOr<std::vector<Reply>> ClusterConnection::Run(
    const std::vector<std::vector<std::string>>& commands,
    std::optional<std::string_view> route_key, std::chrono::milliseconds block) {
  if (broken()) return Status::Unavailable("redis cluster: " + broken_reason_ + "; Reconnect()");
  // Cut the pipeline into units and give each the slot of its first keyed command.
  std::vector<Unit> units;
  for (std::size_t i = 0; i < commands.size();) {
    Unit unit{i, 1, -1, std::nullopt};
    const std::string name = commands[i].empty() ? "" : Upper(commands[i][0]);
    if (name == "WATCH" || name == "MULTI") {
      while (unit.first + unit.count < commands.size()) {
        const auto& next = commands[unit.first + unit.count];
        ++unit.count;
        const std::string next_name = next.empty() ? "" : Upper(next[0]);
        if (next_name == "EXEC" || next_name == "DISCARD") break;
      }
    }
    for (std::size_t j = unit.first; j < unit.first + unit.count && unit.slot < 0; ++j) {
      if (auto key = CommandKey(commands[j])) unit.slot = KeySlot(*key);
    }
    units.push_back(unit);
    i += unit.count;
  }
  // Keyless units follow the keyed unit before them, else the one after them.
  int previous = -1;
  for (Unit& unit : units) {
    if (unit.slot < 0) unit.slot = previous;
    previous = unit.slot;
  }
  int next = route_key ? KeySlot(*route_key) : -1;
  for (auto it = units.rbegin(); it != units.rend(); ++it) {
    if (it->slot < 0) it->slot = next;
    next = it->slot;
  }

  std::vector<Reply> replies(commands.size());
  std::vector<std::size_t> todo(units.size());
  for (std::size_t u = 0; u < units.size(); ++u) todo[u] = u;
  std::chrono::milliseconds pause = kFirstPause;
  std::string last_retry_error;
  for (int round = 0; round < kMaxRounds && !todo.empty(); ++round) {
    // Group the units by node.
    std::map<std::string, std::pair<RedisNode*, std::vector<std::size_t>>> by_node;
    for (std::size_t u : todo) {
      const Unit& unit = units[u];
      NodeAddress address;
      if (unit.ask) {
        address = *unit.ask;
      } else if (unit.slot < 0) {
        if (slots_.primaries().empty())
          return Broken(Status::Unavailable("redis cluster: no primary"));
        address = slots_.primaries().front();
      } else if (const NodeAddress* owner = slots_.Owner(unit.slot)) {
        address = *owner;
      } else {
        return Broken(Status::Unavailable("redis cluster: slot " + std::to_string(unit.slot) +
                                          " is served by no primary"));
      }
      StatusOr<RedisNode*> node = NodeAt(address);
      if (!node.ok()) return Broken(node.status());
      auto& entry = by_node[address.ToString()];
      entry.first = *node;
      entry.second.push_back(u);
    }
    // Send every node its commands, then read every node's replies.
    for (auto& [name, entry] : by_node) {
      for (std::size_t u : entry.second) {
        const Unit& unit = units[u];
        for (std::size_t j = unit.first; j < unit.first + unit.count; ++j) {
          if (unit.ask) entry.first->Append({"ASKING"});
          entry.first->Append(commands[j]);
        }
      }
      if (Status s = entry.first->Send(); !s.ok()) {
        // Read nothing more anywhere: every node with commands in flight is dropped.
        for (auto& [other_name, other] : by_node) (void)other.first->Flush();
        return Broken(s);
      }
    }
    Status failure;
    std::vector<std::size_t> retry;
    bool refresh = false;
    bool wait = false;
    for (auto& [name, entry] : by_node) {
      StatusOr<std::vector<Reply>> got = entry.first->Flush(block);
      if (!got.ok()) {
        if (failure.ok()) failure = got.status();
        continue;  // the other nodes' replies are still read, so their connections stay usable
      }
      std::size_t at = 0;
      for (std::size_t u : entry.second) {
        Unit& unit = units[u];
        const bool asked = unit.ask.has_value();
        Redirect redirect = Redirect::kNone;
        NodeAddress target;
        for (std::size_t j = unit.first; j < unit.first + unit.count; ++j) {
          if (asked) ++at;  // the ASKING reply
          Reply& reply = (*got)[at++];
          if (redirect == Redirect::kNone) redirect = RedirectOf(reply, &target);
          if (redirect == Redirect::kRetryLater) last_retry_error = reply.str;
          replies[j] = std::move(reply);
        }
        unit.ask.reset();
        if (redirect == Redirect::kNone) continue;
        retry.push_back(u);
        if (redirect == Redirect::kMoved) {
          slots_.Assign(unit.slot, unit.slot, target);
          refresh = true;
        } else if (redirect == Redirect::kAsk && unit.count == 1) {
          unit.ask = target;
        } else {
          wait = true;  // TRYAGAIN, CLUSTERDOWN, or an ASK for a transaction: the move will end
          refresh = true;
        }
      }
    }
    if (!failure.ok()) return Broken(failure);
    todo = std::move(retry);
    if (todo.empty()) break;
    if (round + 1 == kMaxRounds) break;
    if (wait) {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, kMaxPause);
    }
    if (refresh) (void)RefreshSlotMap();  // on failure the MOVED targets are used as they are
  }
  if (!todo.empty() && !last_retry_error.empty()) {
    // Still no node serving the slot after the retries: as unavailable as a Redis that is down.
    return Broken(Status::Unavailable("redis cluster: " + last_retry_error));
  }
  return replies;
}

}  // namespace baton::internal
