#include "broker/namespace_settings.h"

#include <string>
#include <string_view>

namespace baton::internal {

StatusOr<NamespaceSettings> ParseNamespaceSettings(const Reply& reply) {
  if (reply.is_error()) return StatusFromErrorReply(reply);
  if (reply.type != Reply::Type::kArray || reply.elements.size() % 2 != 0) {
    return Status::Internal("baton_v2_configure: expected setting, value pairs");
  }
  NamespaceSettings s;
  int seen = 0;
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) {
    const std::string name = reply.elements[i].AsString();
    const Reply& value = reply.elements[i + 1];
    if (value.type != Reply::Type::kInteger) {
      return Status::Internal("baton_v2_configure: " + name + " is not an integer");
    }
    std::int64_t* field = nullptr;
    if (name == "events_maxlen") field = &s.events_maxlen;
    if (name == "done_retention_s") field = &s.done_retention_s;
    if (name == "dlq_max") field = &s.dlq_max;
    if (name == "dlq_retention_s") field = &s.dlq_retention_s;
    if (name == "lease_ms") field = &s.lease_ms;
    if (field == nullptr) continue;  // a newer library's setting: not ours to know
    *field = value.integer;
    ++seen;
  }
  if (seen != 5) return Status::Internal("baton_v2_configure: a setting is missing in the reply");
  return s;
}

}  // namespace baton::internal
