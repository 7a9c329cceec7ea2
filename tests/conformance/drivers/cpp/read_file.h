#pragma once
// Whole-file reads, byte for byte (payload files must reach the SDK exactly as stored).
#include <optional>
#include <string>

namespace conformance {

// The file's bytes, or nullopt when it cannot be read.
std::optional<std::string> ReadFileBytes(const std::string& path);

}  // namespace conformance
