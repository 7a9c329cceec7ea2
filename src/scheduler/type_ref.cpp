#include "scheduler/type_ref.h"

#include <algorithm>

#include "core/keys.h"

namespace baton::internal {

namespace {

// The members of an SMEMBERS reply; an error reply becomes a Status.
StatusOr<std::vector<std::string>> Members(const Reply& reply) {
  if (reply.is_error()) return StatusFromErrorReply(reply);
  std::vector<std::string> out;
  out.reserve(reply.elements.size());
  for (const Reply& e : reply.elements) out.push_back(e.AsString());
  return out;
}

}  // namespace

StatusOr<std::vector<TypeRef>> DiscoverTypes(RedisConnection& conn) {
  StatusOr<Reply> ns_reply = conn.Command({"SMEMBERS", std::string(Keys::kNamespaces)});
  if (!ns_reply.ok()) return ns_reply.status();
  StatusOr<std::vector<std::string>> namespaces = Members(*ns_reply);
  if (!namespaces.ok()) return namespaces.status();
  std::vector<TypeRef> out;
  if (namespaces->empty()) return out;
  for (const std::string& ns : *namespaces) conn.Append({"SMEMBERS", Keys(ns).Types()});
  StatusOr<std::vector<Reply>> replies = conn.Flush();
  if (!replies.ok()) return replies.status();
  for (std::size_t i = 0; i < namespaces->size() && i < replies->size(); ++i) {
    StatusOr<std::vector<std::string>> types = Members((*replies)[i]);
    if (!types.ok()) return types.status();
    for (std::string& type : *types) out.push_back({(*namespaces)[i], std::move(type)});
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace baton::internal
