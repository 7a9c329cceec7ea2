#include "broker/cluster_topology.h"

#include <algorithm>
#include <charconv>

namespace baton::internal {
namespace {

Status Malformed(std::string_view command, std::string_view what) {
  return Status::Internal(std::string(command) + ": malformed reply: " + std::string(what));
}

bool ToInt(const Reply& reply, long long* out) {
  if (reply.type == Reply::Type::kInteger) {
    *out = reply.integer;
    return true;
  }
  if (reply.type != Reply::Type::kString) return false;
  const std::string& s = reply.str;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool ValidRange(long long first, long long last) {
  return first >= 0 && last >= first && last < kClusterSlots;
}

// The value of `field` in a flat [field, value, field, value...] array, or nullptr.
const Reply* FlatField(const Reply& pairs, std::string_view field) {
  for (std::size_t i = 0; i + 1 < pairs.elements.size(); i += 2) {
    if (pairs.elements[i].AsString() == field) return &pairs.elements[i + 1];
  }
  return nullptr;
}

// The host a node announces: a real endpoint, else its ip, else the node that was asked.
std::string AnnouncedHost(std::string endpoint, std::string ip, const NodeAddress& asked) {
  if (!endpoint.empty() && endpoint != "?") return endpoint;
  if (!ip.empty() && ip != "?") return ip;
  return asked.host;
}

}  // namespace

std::string NodeAddress::ToString() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

StatusOr<NodeAddress> ParseNodeAddress(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::InvalidArgument("node", "expected host:port (got '" + std::string(text) + "')");
  }
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string_view port_text = text.substr(colon + 1);
  // A MOVED reply may append "@busport" in some versions' CLUSTER NODES form; not in MOVED.
  int port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port < 1 || port > 65535) {
    return Status::InvalidArgument("node",
                                   "port must be 1..65535 (got '" + std::string(port_text) + "')");
  }
  return NodeAddress{std::string(host), port};
}

const NodeAddress* SlotMap::Owner(int slot) const {
  if (slot < 0 || slot >= kClusterSlots) return nullptr;
  const int16_t index = owner_[static_cast<std::size_t>(slot)];
  return index < 0 ? nullptr : &primaries_[static_cast<std::size_t>(index)];
}

void SlotMap::Assign(int first, int last, const NodeAddress& node) {
  auto it = std::find(primaries_.begin(), primaries_.end(), node);
  if (it == primaries_.end()) it = primaries_.insert(primaries_.end(), node);
  const auto index = static_cast<int16_t>(it - primaries_.begin());
  for (int slot = std::max(first, 0); slot <= last && slot < kClusterSlots; ++slot) {
    owner_[static_cast<std::size_t>(slot)] = index;
  }
}

int SlotMap::unserved() const {
  return static_cast<int>(std::count(owner_.begin(), owner_.end(), int16_t{-1}));
}

StatusOr<SlotMap> SlotMapFromShards(const Reply& reply, const NodeAddress& asked) {
  constexpr std::string_view kCommand = "CLUSTER SHARDS";
  if (!reply.is_array()) return Malformed(kCommand, "not an array");
  SlotMap map;
  for (const Reply& shard : reply.elements) {
    if (!shard.is_array()) return Malformed(kCommand, "a shard is not an array");
    const Reply* slots = FlatField(shard, "slots");
    const Reply* nodes = FlatField(shard, "nodes");
    if (slots == nullptr || nodes == nullptr || !slots->is_array() || !nodes->is_array()) {
      return Malformed(kCommand, "a shard lacks slots or nodes");
    }
    if (slots->elements.empty()) continue;  // a primary without slots serves nothing
    const Reply* primary = nullptr;
    for (const Reply& node : nodes->elements) {
      const Reply* role = node.is_array() ? FlatField(node, "role") : nullptr;
      if (role != nullptr && role->AsString() == "master") primary = &node;
    }
    if (primary == nullptr) continue;  // every node of the shard failed: its slots are unserved
    const Reply* port = FlatField(*primary, "port");
    long long port_number = 0;
    if (port == nullptr || !ToInt(*port, &port_number) || port_number < 1 || port_number > 65535) {
      return Malformed(kCommand, "a primary without a TCP port (TLS is not supported)");
    }
    const Reply* endpoint = FlatField(*primary, "endpoint");
    const Reply* ip = FlatField(*primary, "ip");
    const NodeAddress address{
        AnnouncedHost(endpoint ? endpoint->AsString() : "", ip ? ip->AsString() : "", asked),
        static_cast<int>(port_number)};
    if (slots->elements.size() % 2 != 0) return Malformed(kCommand, "odd slot range list");
    for (std::size_t i = 0; i < slots->elements.size(); i += 2) {
      long long first = 0;
      long long last = 0;
      if (!ToInt(slots->elements[i], &first) || !ToInt(slots->elements[i + 1], &last) ||
          !ValidRange(first, last)) {
        return Malformed(kCommand, "bad slot range");
      }
      map.Assign(static_cast<int>(first), static_cast<int>(last), address);
    }
  }
  return map;
}

StatusOr<SlotMap> SlotMapFromSlots(const Reply& reply, const NodeAddress& asked) {
  constexpr std::string_view kCommand = "CLUSTER SLOTS";
  if (!reply.is_array()) return Malformed(kCommand, "not an array");
  SlotMap map;
  for (const Reply& range : reply.elements) {
    long long first = 0;
    long long last = 0;
    if (!range.is_array() || range.elements.size() < 3 || !ToInt(range.elements[0], &first) ||
        !ToInt(range.elements[1], &last) || !ValidRange(first, last)) {
      return Malformed(kCommand, "bad slot range");
    }
    const Reply& primary = range.elements[2];
    long long port = 0;
    if (!primary.is_array() || primary.elements.size() < 2 || !ToInt(primary.elements[1], &port) ||
        port < 1 || port > 65535) {
      return Malformed(kCommand, "bad primary address");
    }
    map.Assign(static_cast<int>(first), static_cast<int>(last),
               NodeAddress{AnnouncedHost("", primary.elements[0].AsString(), asked),
                           static_cast<int>(port)});
  }
  return map;
}

}  // namespace baton::internal
