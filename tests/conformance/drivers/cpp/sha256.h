#pragma once
// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex. The conformance driver reports the
// digest of the payload bytes it received; libbaton has no hash of its own and the driver must not
// pull in a crypto library just for this.
#include <string>
#include <string_view>

namespace conformance {

std::string Sha256Hex(std::string_view data);

}  // namespace conformance
