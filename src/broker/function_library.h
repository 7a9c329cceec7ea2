#pragma once
// The Redis Functions library `baton` (functions/*.lua) as this build embedded it, and the version
// handshake every client performs on connect (docs/protocol.md "Loading", "baton_version").
#include <string>
#include <string_view>

#include "baton/status.h"
#include "broker/protocol_gen.h"
#include "broker/redis_connection.h"

namespace baton::internal {

// The library version this client was built and tested with (contract/protocol.json "version").
inline constexpr std::string_view kFunctionLibraryVersion = protocol::kVersion;

// The library source: functions/*.lua concatenated in file-name order, embedded at build time.
// Empty if the build found no functions/*.lua.
std::string_view FunctionLibrarySource();

// Loads (or replaces) the library with FUNCTION LOAD REPLACE (on every primary of a cluster),
// then reads its version back with
// baton_version. OK only when the loaded version is kFunctionLibraryVersion; stores it in
// *loaded_version when given. Errors: kInternal when Redis refuses the source (the message carries
// Redis' compile error), kVersionMismatch, kUnavailable.
Status LoadFunctionLibrary(RedisConnection& connection, std::string* loaded_version = nullptr);

// FCALL_RO baton_v2_version 0 (on every primary of a cluster, so a primary that joined or a
// replica promoted without the library is found). OK when the loaded library is
// kFunctionLibraryVersion. Otherwise
// kVersionMismatch: "functions library version X loaded in Redis (on the primary host:port),
// this client needs 2: run 'baton init'" (X is "none" when the library or the function is
// missing); kUnavailable when
// Redis cannot be reached.
Status CheckFunctionLibrary(RedisConnection& connection);

}  // namespace baton::internal
