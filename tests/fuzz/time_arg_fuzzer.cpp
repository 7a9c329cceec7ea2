// Time arguments of `baton` (--since/--until: cli/time_arg.h; --at: a run time). Properties:
//  - a rejected argument gets kInvalidArgument naming the option;
//  - Unix seconds come back as milliseconds, spans count back from now, and no form overflows
//    (UBSan) or lands outside 0000..9999 / the contract's range for --at.
#include <charconv>
#include <string>

#include "baton/task.h"
#include "fuzz_check.h"
#include "fuzz_targets.h"
#include "time_arg.h"

namespace baton::fuzz {

int FuzzTimeArg(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = AsText(data, size);
  constexpr std::int64_t kNowMs = 1722489600123;

  StatusOr<std::int64_t> since = cli::ParseTimeArg("since", text, kNowMs);
  if (!since.ok()) {
    BATON_FUZZ_CHECK(NamesAField(since.status(), {"since"}), since.status().ToString());
  } else {
    // Year 0000 .. 9999 in ms: the widest a date-time can say; spans stay within 2100 of now.
    constexpr std::int64_t kYear0Ms = -62167219200000;
    constexpr std::int64_t kYear10000Ms = 253402300800000;
    BATON_FUZZ_CHECK(*since >= kYear0Ms && *since < kYear10000Ms, std::to_string(*since));
    std::int64_t seconds = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec == std::errc() && end == text.data() + text.size() && seconds >= 0) {
      BATON_FUZZ_CHECK(*since == seconds * 1000, std::to_string(*since));
    }
  }

  StatusOr<std::int64_t> at = cli::ParseUnixSecondsArg("at", text);
  if (!at.ok()) {
    BATON_FUZZ_CHECK(NamesAField(at.status(), {"at"}), at.status().ToString());
  } else {
    BATON_FUZZ_CHECK(*at >= kMinCreatedAt && *at <= kMaxCreatedAt, std::to_string(*at));
  }
  return 0;
}

}  // namespace baton::fuzz

BATON_FUZZ_MAIN(baton::fuzz::FuzzTimeArg)
