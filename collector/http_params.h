#pragma once
// Query parameters of the HTTP APIs (the collector's and the console's), checked with a message
// that names the parameter and its rule.
#include <httplib.h>

#include <cstdint>
#include <optional>
#include <string>

#include "baton/status.h"

namespace baton::collector {

// An integer parameter in [min, max]; nullopt when absent or empty. kInvalidArgument "NAME: must
// be an integer from MIN to MAX" otherwise.
StatusOr<std::optional<std::int64_t>> IntParam(const httplib::Request& req, const char* name,
                                               std::int64_t min, std::int64_t max);

// A text parameter; nullopt when absent or empty.
std::optional<std::string> TextParam(const httplib::Request& req, const char* name);

}  // namespace baton::collector
