#pragma once
// Reads the reply of baton_v2_configure (a flat array: setting, integer value, ...) into
// NamespaceSettings. Shared by the Client, the Worker (the lease of a namespace) and the CLI.
#include "baton/client.h"
#include "baton/status.h"
#include "broker/redis_connection.h"

namespace baton::internal {

// An error reply becomes its Status; a reply of another shape, or one that lacks a setting, is
// kInternal.
StatusOr<NamespaceSettings> ParseNamespaceSettings(const Reply& reply);

}  // namespace baton::internal
