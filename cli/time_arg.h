#pragma once
// Time arguments of `baton` (--since, --until, --at): an absolute Unix time in seconds
// ("1722489600"), a UTC date-time ("2024-08-01T12:00:00Z", "2024-08-01 12:00:00", "2024-08-01"),
// or a span before now ("90s", "15m", "2h", "7d").
#include <cstdint>
#include <string_view>

#include "baton/status.h"

namespace baton::cli {

// Unix ms of `text`; relative spans count back from `now_ms`. kInvalidArgument naming `field` and
// the accepted forms otherwise; Unix seconds past kMaxCreatedAt (2100) are refused with the hint
// "milliseconds?" rather than counted (or overflowed) into a far future.
StatusOr<std::int64_t> ParseTimeArg(std::string_view field, std::string_view text,
                                    std::int64_t now_ms);

// A run time (--at): Unix seconds within the range the contract gives created_at
// (kMinCreatedAt..kMaxCreatedAt), with the same words: "at: must be Unix seconds MIN..MAX (got N:
// milliseconds?)".
StatusOr<std::int64_t> ParseUnixSecondsArg(std::string_view field, std::string_view text);

}  // namespace baton::cli
