#include "time_arg.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <string>

#include "baton/task.h"
#include "core/task_rules.h"

namespace baton::cli {

namespace {

bool ParseInt(std::string_view text, std::int64_t* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// Fixed-width digits at text[pos, pos+n). Digits only: from_chars alone takes a sign ("-084").
bool Digits(std::string_view text, std::size_t pos, std::size_t n, int* out) {
  if (pos + n > text.size()) return false;
  const std::string_view part = text.substr(pos, n);
  if (!std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  std::int64_t v = 0;
  if (!ParseInt(text.substr(pos, n), &v)) return false;
  *out = static_cast<int>(v);
  return true;
}

// "YYYY-MM-DD", optionally followed by 'T' or ' ' and "HH:MM[:SS]", optionally 'Z'. UTC.
bool ParseDateTime(std::string_view text, std::int64_t* ms) {
  if (!text.empty() && (text.back() == 'Z' || text.back() == 'z')) text.remove_suffix(1);
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!Digits(text, 0, 4, &y) || text.size() < 10 || text[4] != '-' || !Digits(text, 5, 2, &mo) ||
      text[7] != '-' || !Digits(text, 8, 2, &d)) {
    return false;
  }
  if (text.size() > 10) {
    if ((text[10] != 'T' && text[10] != ' ') || !Digits(text, 11, 2, &h) || text.size() < 16 ||
        text[13] != ':' || !Digits(text, 14, 2, &mi)) {
      return false;
    }
    if (text.size() > 16) {
      if (text.size() != 19 || text[16] != ':' || !Digits(text, 17, 2, &s)) return false;
    }
  }
  using namespace std::chrono;
  year_month_day ymd{year(y), month(static_cast<unsigned>(mo)), day(static_cast<unsigned>(d))};
  if (!ymd.ok() || h > 23 || mi > 59 || s > 59) return false;
  auto t = sys_days(ymd) + hours(h) + minutes(mi) + seconds(s);
  *ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  return true;
}

}  // namespace

StatusOr<std::int64_t> ParseTimeArg(std::string_view field, std::string_view text,
                                    std::int64_t now_ms) {
  std::int64_t n = 0;
  if (ParseInt(text, &n) && n >= 0) {
    const internal::task_rules::IntegerRule rule{field, "must be Unix seconds", 0, kMaxCreatedAt,
                                                 true};
    if (Status s = internal::task_rules::CheckInteger(rule, n); !s.ok()) return s;
    return n * 1000;
  }
  if (text == "now") return now_ms;
  if (text.size() >= 2) {
    char unit = text.back();
    std::int64_t per = unit == 's'   ? 1000
                       : unit == 'm' ? 60000
                       : unit == 'h' ? 3600000
                       : unit == 'd' ? 86400000
                                     : 0;
    // A span longer than the time since the epoch is a typo (and would overflow).
    if (per > 0 && ParseInt(text.substr(0, text.size() - 1), &n) && n >= 0 &&
        n <= kMaxCreatedAt * 1000 / per) {
      return now_ms - n * per;
    }
  }
  std::int64_t ms = 0;
  if (ParseDateTime(text, &ms)) return ms;
  return Status::InvalidArgument(
      field,
      "must be Unix seconds (1722489600), a UTC date-time (2024-08-01T12:00:00Z) or a span "
      "before now (90s, 15m, 2h, 7d) (got \"" +
          std::string(text) + "\")");
}

StatusOr<std::int64_t> ParseUnixSecondsArg(std::string_view field, std::string_view text) {
  const internal::task_rules::IntegerRule rule{field, "must be Unix seconds", kMinCreatedAt,
                                               kMaxCreatedAt, true};
  std::int64_t seconds = 0;
  if (Status s = internal::task_rules::ParseInteger(rule, text, &seconds); !s.ok()) return s;
  return seconds;
}

}  // namespace baton::cli
