#include "scheduler/type_ref.h"

#include <algorithm>

#include "baton/task.h"
#include "broker/key_scan.h"
#include "broker/keys.h"
#include "broker/partitions.h"

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

void SortUnique(std::vector<std::string>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

}  // namespace

StatusOr<std::vector<std::string>> ListRegisteredNamespaces(RedisConnection& conn) {
  StatusOr<Reply> reply = conn.Command({"SMEMBERS", std::string(Keys::kNamespaces)});
  if (!reply.ok()) return reply.status();
  StatusOr<std::vector<std::string>> members = Members(*reply);
  if (!members.ok()) return members.status();
  std::erase_if(*members, [](const std::string& ns) { return !IsValidStorageNamespace(ns); });
  SortUnique(&*members);
  return members;
}

std::optional<std::string> NamespaceOfTypesKey(std::string_view key) {
  constexpr std::string_view kHead = "baton:v2:{";
  constexpr std::string_view kTail = "}:types";
  if (key.size() <= kHead.size() + kTail.size() || !key.starts_with(kHead) ||
      !key.ends_with(kTail)) {
    return std::nullopt;
  }
  std::string_view ns = key.substr(kHead.size(), key.size() - kHead.size() - kTail.size());
  // A valid name (or partition "NS:p") has no '}', so "baton:v2:{a}:unique:x}:types" is not a
  // types set.
  if (!IsValidStorageNamespace(ns)) return std::nullopt;
  return std::string(ns);
}

StatusOr<std::vector<std::string>> ScanNamespaces(RedisConnection& conn, int count) {
  // '{' and '}' are plain characters in a MATCH pattern.
  StatusOr<std::vector<std::string>> keys = ScanKeys(conn, "baton:v2:{*}:types", "set", count);
  if (!keys.ok()) return keys.status();
  std::vector<std::string> out;
  for (const std::string& key : *keys) {
    if (std::optional<std::string> ns = NamespaceOfTypesKey(key)) out.push_back(std::move(*ns));
  }
  SortUnique(&out);
  return out;
}

StatusOr<std::vector<TypeRef>> ListTypes(RedisConnection& conn,
                                         const std::vector<std::string>& namespaces) {
  std::vector<TypeRef> out;
  if (namespaces.empty()) return out;
  for (const std::string& ns : namespaces) conn.Append({"SMEMBERS", Keys(ns).Types()});
  StatusOr<std::vector<Reply>> replies = conn.Flush();
  if (!replies.ok()) return replies.status();
  for (std::size_t i = 0; i < namespaces.size() && i < replies->size(); ++i) {
    StatusOr<std::vector<std::string>> types = Members((*replies)[i]);
    if (!types.ok()) return types.status();
    for (std::string& type : *types) {
      if (IsValidName(type)) out.push_back({namespaces[i], std::move(type)});
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace baton::internal
