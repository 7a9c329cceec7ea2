#include "harness/redis_cluster.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "harness/process.h"

namespace baton::testing {
namespace {

// CLUSTER NODES lines: "<id> <ip:port@bus> <flags> <primary-id> ... <slot ranges>".
struct NodeLine {
  int port = 0;
  bool primary = false;
  bool failed = false;
  std::vector<std::pair<int, int>> slots;
};

std::vector<NodeLine> ParseClusterNodes(const std::string& text) {
  std::vector<NodeLine> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string word; fields >> word;) f.push_back(word);
    if (f.size() < 8) continue;
    NodeLine node;
    const std::string& address = f[1];
    node.port = std::stoi(address.substr(address.rfind(':') + 1, address.find('@')));
    node.primary = f[2].find("master") != std::string::npos;
    node.failed = f[2].find("fail") != std::string::npos;
    for (std::size_t i = 8; i < f.size(); ++i) {
      if (f[i].front() == '[') continue;  // a slot being migrated
      const std::size_t dash = f[i].find('-');
      const int first = std::stoi(f[i].substr(0, dash));
      const int last = dash == std::string::npos ? first : std::stoi(f[i].substr(dash + 1));
      node.slots.emplace_back(first, last);
    }
    out.push_back(node);
  }
  return out;
}

std::string Info(RedisServer& server, const std::string& command, const std::string& section) {
  ReplyPtr reply = server.Command({command, section});
  if (!reply || (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_STATUS)) return "";
  return std::string(reply->str, reply->len);
}

}  // namespace

RedisCluster::RedisCluster(int primaries, int replicas, std::vector<std::string> extra_args) {
  const int count = primaries * (1 + replicas);
  std::vector<std::string> create = {"redis-cli", "--cluster", "create"};
  for (int i = 0; i < count; ++i) {
    // The bus port is given, so that port + 10000 need not be free (or below 65536).
    std::vector<std::string> args = {"--cluster-enabled",      "yes",
                                     "--cluster-config-file",  "nodes.conf",
                                     "--cluster-node-timeout", "1000",
                                     "--cluster-port",         std::to_string(FreeLoopbackPort())};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    nodes_.push_back(std::make_unique<RedisServer>(args));
    killed_.push_back(false);
    create.push_back("127.0.0.1:" + std::to_string(nodes_.back()->port()));
  }
  create.insert(create.end(), {"--cluster-replicas", std::to_string(replicas), "--cluster-yes"});
  TempDir log_dir;
  const std::string log = log_dir.path() + "/create.log";
  Process cli(create, log);
  std::optional<int> status = cli.Wait(std::chrono::seconds(60));
  if (status != 0) throw std::runtime_error("redis-cli --cluster create failed: " + ReadFile(log));
  WaitHealthy();
  // Replicas in sync, so that WAIT and a failover have something to count on.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int index : Replicas()) {
    while (Info(node(index), "INFO", "replication").find("master_link_status:up") ==
           std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("a replica did not sync with its primary");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

std::string RedisCluster::url() const {
  std::string url = "redis+cluster://";
  bool first = true;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (killed_[i]) continue;
    url += (first ? "" : ",") + std::string("127.0.0.1:") + std::to_string(nodes_[i]->port());
    first = false;
  }
  return url;
}

void RedisCluster::WaitHealthy(int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (killed_[i]) continue;
    while (Info(*nodes_[i], "CLUSTER", "INFO").find("cluster_state:ok") == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("cluster_state is not ok on node " + std::to_string(i));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

std::vector<int> RedisCluster::Primaries() {
  std::vector<int> out;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (killed_[i]) continue;
    for (const NodeLine& line : ParseClusterNodes(Info(*nodes_[i], "CLUSTER", "NODES"))) {
      if (line.port == nodes_[i]->port() && line.primary && !line.slots.empty()) {
        out.push_back(static_cast<int>(i));
      }
    }
  }
  return out;
}

std::vector<int> RedisCluster::Replicas() {
  std::vector<int> out;
  const std::vector<int> primaries = Primaries();
  for (int i = 0; i < size(); ++i) {
    if (!killed_[static_cast<std::size_t>(i)] &&
        std::find(primaries.begin(), primaries.end(), i) == primaries.end()) {
      out.push_back(i);
    }
  }
  return out;
}

int RedisCluster::PrimaryFor(const std::string& key) {
  const int live = Primaries().at(0);
  const long long slot = node(live).Integer({"CLUSTER", "KEYSLOT", key});
  for (const NodeLine& line : ParseClusterNodes(Info(node(live), "CLUSTER", "NODES"))) {
    if (!line.primary || line.failed) continue;
    for (auto [first, last] : line.slots) {
      if (slot < first || slot > last) continue;
      for (int i = 0; i < size(); ++i) {
        if (nodes_[static_cast<std::size_t>(i)]->port() == line.port) return i;
      }
    }
  }
  throw std::runtime_error("no primary serves the slot of " + key);
}

void RedisCluster::LoadFunctions() {
  for (int index : Primaries()) node(index).LoadFunctions();
}

void RedisCluster::KillAndWaitForFailover(int index, int timeout_s) {
  node(index).Kill();
  killed_.at(static_cast<std::size_t>(index)) = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (true) {
    // Every slot served by a live primary (as that primary itself says), every node ok.
    int served = 0;
    for (int i : Primaries()) {
      for (const NodeLine& line : ParseClusterNodes(Info(node(i), "CLUSTER", "NODES"))) {
        if (line.port != node(i).port()) continue;
        for (auto [first, last] : line.slots) served += last - first + 1;
      }
    }
    bool ok = served == 16384;
    for (int i = 0; i < size() && ok; ++i) {
      if (killed_[static_cast<std::size_t>(i)]) continue;
      ok = Info(node(i), "CLUSTER", "INFO").find("cluster_state:ok") != std::string::npos;
    }
    if (ok) return;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("no failover within " + std::to_string(timeout_s) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace baton::testing
