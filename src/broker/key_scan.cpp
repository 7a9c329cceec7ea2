#include "broker/key_scan.h"

namespace baton::internal {

StatusOr<std::vector<std::string>> ScanKeys(RedisConnection& conn, std::string_view pattern,
                                            std::string_view type, int count) {
  std::vector<std::string> keys;
  for (const std::string& node : conn.Nodes()) {
    std::string cursor = "0";
    do {
      StatusOr<Reply> reply =
          conn.CommandOnNode(node, {"SCAN", cursor, "MATCH", std::string(pattern), "COUNT",
                                    std::to_string(count), "TYPE", std::string(type)});
      if (!reply.ok()) return reply.status();
      if (reply->is_error()) return StatusFromErrorReply(*reply).WithContext("SCAN");
      if (!reply->is_array() || reply->elements.size() != 2 || !reply->elements[1].is_array()) {
        return Status::Internal("SCAN: expected a cursor and a list of keys");
      }
      cursor = reply->elements[0].AsString();
      for (const Reply& key : reply->elements[1].elements) keys.push_back(key.AsString());
    } while (cursor != "0");
  }
  return keys;
}

}  // namespace baton::internal
