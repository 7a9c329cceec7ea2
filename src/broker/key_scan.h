#pragma once
// SCAN over every server that holds data: the one Redis, or each primary of a cluster (a SCAN
// cursor belongs to one node, so each node is walked to its end).
#include <string>
#include <string_view>
#include <vector>

#include "baton/status.h"
#include "broker/redis_connection.h"

namespace baton::internal {

// Every key matching `pattern` (MATCH syntax) of Redis type `type` ("set", "stream"...), in the
// order SCAN returns them, possibly with repeats (SCAN may return a key twice). `count` is SCAN's
// COUNT hint. Errors: the connection's, or kInternal naming SCAN for an error reply or a
// malformed one.
StatusOr<std::vector<std::string>> ScanKeys(RedisConnection& conn, std::string_view pattern,
                                            std::string_view type, int count = 1000);

}  // namespace baton::internal
