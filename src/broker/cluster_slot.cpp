#include "broker/cluster_slot.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace baton::internal {
namespace {

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the checksum the cluster spec names.
constexpr std::array<uint16_t, 256> MakeCrcTable() {
  std::array<uint16_t, 256> table{};
  for (int byte = 0; byte < 256; ++byte) {
    auto crc = static_cast<uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) != 0 ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<uint16_t>(crc << 1);
    }
    table[static_cast<std::size_t>(byte)] = crc;
  }
  return table;
}
constexpr std::array<uint16_t, 256> kCrcTable = MakeCrcTable();

uint16_t Crc16(std::string_view data) {
  uint16_t crc = 0;
  for (char c : data) {
    const auto index = static_cast<uint8_t>((crc >> 8) ^ static_cast<uint8_t>(c));
    crc = static_cast<uint16_t>((crc << 8) ^ kCrcTable[index]);
  }
  return crc;
}

std::string Upper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

bool IsCommand(const std::string& name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

int KeySlot(std::string_view key) {
  const std::size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const std::size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close != open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return Crc16(key) % kClusterSlots;
}

std::optional<std::string_view> CommandKey(const std::vector<std::string>& argv) {
  if (argv.size() < 2) return std::nullopt;
  const std::string name = Upper(argv[0]);
  if (IsCommand(name, {"FCALL", "FCALL_RO", "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO"})) {
    long long numkeys = 0;
    if (argv.size() < 4) return std::nullopt;
    const std::string& count = argv[2];
    auto [ptr, ec] = std::from_chars(count.data(), count.data() + count.size(), numkeys);
    if (ec != std::errc() || numkeys <= 0) return std::nullopt;
    return std::string_view(argv[3]);
  }
  if (name == "XREAD" || name == "XREADGROUP") {
    for (std::size_t i = 1; i + 1 < argv.size(); ++i) {
      if (Upper(argv[i]) == "STREAMS") return std::string_view(argv[i + 1]);
    }
    return std::nullopt;
  }
  if (IsCommand(name, {"XGROUP", "XINFO", "OBJECT", "MEMORY"})) {
    if (argv.size() < 3) return std::nullopt;
    return std::string_view(argv[2]);
  }
  if (IsCommand(name, {"PING",    "TIME",     "CLIENT",    "MULTI",     "EXEC",    "DISCARD",
                       "UNWATCH", "WAIT",     "PUBLISH",   "SUBSCRIBE", "SCAN",    "FUNCTION",
                       "INFO",    "CONFIG",   "DBSIZE",    "SLOWLOG",   "ACL",     "FLUSHALL",
                       "FLUSHDB", "CLUSTER",  "AUTH",      "SELECT",    "HELLO",   "ECHO",
                       "ASKING",  "READONLY", "COMMAND",   "DEBUG",     "LATENCY", "MODULE",
                       "SCRIPT",  "SHUTDOWN", "ROLE",      "LASTSAVE",  "BGSAVE",  "BGREWRITEAOF",
                       "SAVE",    "MONITOR",  "RANDOMKEY", "KEYS",      "SWAPDB"})) {
    return std::nullopt;
  }
  return std::string_view(argv[1]);
}

}  // namespace baton::internal
