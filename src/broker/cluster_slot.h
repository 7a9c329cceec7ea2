#pragma once
// Redis Cluster key routing: which of the 16384 hash slots a key lives in, and which argument of
// a command is the key that routes it (https://redis.io/docs/reference/cluster-spec/).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton::internal {

inline constexpr int kClusterSlots = 16384;

// CRC16 (XMODEM) of the key's hash tag (the text between the first '{' and the next '}', when
// not empty) or of the whole key, modulo 16384.
int KeySlot(std::string_view key);

// The key a command is routed by, or nullopt for a keyless command (PING, TIME, CLIENT, MULTI,
// EXEC, WAIT, PUBLISH, SCAN, FUNCTION, INFO, ...). FCALL/FCALL_RO and EVAL/EVALSHA: their first
// KEYS entry (nullopt with numkeys 0). XREAD/XREADGROUP: the first stream after STREAMS.
// XGROUP/XINFO/OBJECT/MEMORY subcommands: the argument after the subcommand. Otherwise argv[1].
std::optional<std::string_view> CommandKey(const std::vector<std::string>& argv);

}  // namespace baton::internal
