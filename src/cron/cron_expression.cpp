#include "cron/cron_expression.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <vector>

namespace baton::internal {
namespace {

using std::chrono::days;
using std::chrono::hours;
using std::chrono::local_days;
using std::chrono::local_seconds;
using std::chrono::minutes;
using std::chrono::seconds;

// What one field accepts. Day-of-week runs 0..7 (0 and 7 are both Sunday), so `1/2` is
// 1,3,5,7 (Mon, Wed, Fri, Sun) as in cronie and croniter; steps stop at 7 there.
struct FieldSpec {
  std::string_view name;
  int min;
  int max;
  int max_step;
  const std::array<std::string_view, 13>* names;  // names[i] is value i; nullptr: numbers only
  bool allows_question;
};

constexpr std::array<std::string_view, 13> kMonthNames = {
    "", "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<std::string_view, 13> kDayNames = {
    "SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", "", "", "", "", "", ""};

const FieldSpec kSecond{"second", 0, 59, 60, nullptr, false};
const FieldSpec kMinute{"minute", 0, 59, 60, nullptr, false};
const FieldSpec kHour{"hour", 0, 23, 24, nullptr, false};
const FieldSpec kDayOfMonth{"day-of-month", 1, 31, 31, nullptr, true};
const FieldSpec kMonth{"month", 1, 12, 12, &kMonthNames, false};
const FieldSpec kDayOfWeek{"day-of-week", 0, 7, 7, &kDayNames, true};

Status ScheduleError(std::string rule) { return Status::InvalidArgument("schedule", rule); }

Status FieldError(const FieldSpec& field, std::string rule) {
  return ScheduleError(std::string(field.name) + ": " + rule);
}

std::string RangeText(const FieldSpec& field) {
  return std::to_string(field.min) + ".." + std::to_string(field.max);
}

std::string Upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool AllDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool AllAlpha(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalpha(static_cast<unsigned char>(c)) != 0;
  });
}

// A single value: a number in the field's range or one of its names.
StatusOr<int> ParseValue(const FieldSpec& field, std::string_view text) {
  if (AllDigits(text)) {
    int value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < field.min ||
        value > field.max) {
      return FieldError(field, std::string(text) + " is out of range " + RangeText(field));
    }
    return value;
  }
  if (field.names != nullptr && AllAlpha(text)) {
    const std::string upper = Upper(text);
    for (int i = 0; i < static_cast<int>(field.names->size()); ++i) {
      if (!(*field.names)[i].empty() && (*field.names)[i] == upper) return i;
    }
    return FieldError(field, "unknown name \"" + std::string(text) + "\"");
  }
  if (field.names == nullptr && AllAlpha(text)) {
    return FieldError(field, "\"" + std::string(text) + "\" is not a number (names are allowed " +
                                 "only in month and day-of-week)");
  }
  return FieldError(field, "\"" + std::string(text) + "\" is not a number");
}

StatusOr<int> ParseStep(const FieldSpec& field, std::string_view text) {
  const int span = field.max_step;
  const std::string rule = " is out of range 1.." + std::to_string(span);
  if (!AllDigits(text)) {
    return FieldError(field, "step \"" + std::string(text) + "\" is not a number");
  }
  int step = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), step);
  if (ec != std::errc() || end != text.data() + text.size() || step < 1 || step > span) {
    return FieldError(field, "step " + std::string(text) + rule);
  }
  return step;
}

// Result of parsing one field.
struct ParsedField {
  std::uint64_t bits = 0;
  std::string canonical;
  bool starts_with_star = false;  // first element is `*` or `?` (Vixie's DOM_STAR / DOW_STAR)
  bool uses_star_or_step = false;
};

// Folds day-of-week 7 onto 0 (both are Sunday).
int Normalize(const FieldSpec& field, int value) {
  return (&field == &kDayOfWeek && value == 7) ? 0 : value;
}

// One list element: `*`, `*/n`, `v`, `a-b`, `a-b/n` or `a/n`.
Status ParseElement(const FieldSpec& field, std::string_view element, ParsedField& out) {
  std::string_view base = element;
  std::optional<int> step;
  if (const auto slash = element.find('/'); slash != std::string_view::npos) {
    base = element.substr(0, slash);
    auto parsed_step = ParseStep(field, element.substr(slash + 1));
    if (!parsed_step.ok()) return parsed_step.status();
    step = *parsed_step;
    out.uses_star_or_step = true;
  }
  if (base.empty()) {
    return FieldError(field, "\"" + std::string(element) +
                                 "\" is malformed (expected *, a value, a-b, */n, a-b/n or a/n)");
  }
  int first = 0;
  int last = 0;
  std::string text;
  if (base == "*") {
    out.uses_star_or_step = true;
    first = field.min;
    last = field.max;
    text = (step && *step > 1) ? "*/" + std::to_string(*step) : "*";
  } else if (const auto dash = base.find('-'); dash != std::string_view::npos) {
    if (dash == 0 || dash + 1 == base.size()) {
      return FieldError(field, "\"" + std::string(element) + "\" is malformed (a range is a-b)");
    }
    auto a = ParseValue(field, base.substr(0, dash));
    if (!a.ok()) return a.status();
    auto b = ParseValue(field, base.substr(dash + 1));
    if (!b.ok()) return b.status();
    if (*a > *b) {
      return FieldError(
          field, "range " + std::string(base) + " is reversed (the start must not exceed the end)");
    }
    first = *a;
    last = *b;
    text = (first == last && !step) ? std::to_string(Normalize(field, first))
                                    : std::to_string(first) + "-" + std::to_string(last);
    if (step) text += "/" + std::to_string(*step);
  } else {
    auto value = ParseValue(field, base);
    if (!value.ok()) return value.status();
    first = *value;
    // `a/n` runs from a to the end of the field; a bare value is just itself.
    last = step ? field.max : first;
    text = std::to_string(step ? first : Normalize(field, first));
    if (step) text += "/" + std::to_string(*step);
  }
  for (int v = first; v <= last; v += step.value_or(1)) {
    out.bits |= std::uint64_t{1} << Normalize(field, v);
  }
  if (!out.canonical.empty()) out.canonical += ",";
  out.canonical += text;
  return Status::Ok();
}

StatusOr<ParsedField> ParseField(const FieldSpec& field, std::string_view text) {
  ParsedField out;
  if (text == "?") {
    if (!field.allows_question) {
      return FieldError(field, "\"?\" is allowed only in day-of-month and day-of-week");
    }
    text = "*";
  }
  out.starts_with_star = text.front() == '*';
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = text.find(',', pos);
    const std::string_view element =
        text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (element.empty()) {
      return FieldError(field, "empty list element in \"" + std::string(text) + "\"");
    }
    if (element.find('?') != std::string_view::npos) {
      return FieldError(field, "\"?\" must be the whole field");
    }
    Status status = ParseElement(field, element, out);
    if (!status.ok()) return status;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

// The five-field expansion of a macro, or nullopt when `text` names none.
std::optional<std::string_view> ExpandMacro(std::string_view text) {
  const std::string lower = [&] {
    std::string s(text);
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }();
  if (lower == "@yearly" || lower == "@annually") return "0 0 1 1 *";
  if (lower == "@monthly") return "0 0 1 * *";
  if (lower == "@weekly") return "0 0 * * 0";
  if (lower == "@daily" || lower == "@midnight") return "0 0 * * *";
  if (lower == "@hourly") return "0 * * * *";
  return std::nullopt;
}

std::vector<std::string_view> SplitFields(std::string_view text) {
  std::vector<std::string_view> fields;
  std::size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
    std::size_t end = pos;
    while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
    if (end > pos) fields.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return fields;
}

// Days in a month, Feb counted as 29 (a day that exists in some year).
constexpr int kMaxDaysInMonth[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

// The lowest set bit at position >= from, or -1.
int NextBit(std::uint64_t bits, int from) {
  if (from >= 64) return -1;
  const std::uint64_t rest = bits >> from;
  return rest == 0 ? -1 : from + std::countr_zero(rest);
}

bool HasBit(std::uint64_t bits, int i) { return ((bits >> i) & 1) != 0; }

int LastDay(int y, int m) {
  const std::chrono::year_month_day_last ymdl(
      std::chrono::year{y},
      std::chrono::month_day_last(std::chrono::month{static_cast<unsigned>(m)}));
  return static_cast<int>(static_cast<unsigned>(ymdl.day()));
}

}  // namespace

StatusOr<CronExpression> CronExpression::Parse(std::string_view text) {
  std::vector<std::string_view> fields = SplitFields(text);
  if (fields.empty()) return ScheduleError("empty expression");
  if (fields.front().front() == '@') {
    if (fields.size() != 1) {
      return ScheduleError("a macro (" + std::string(fields.front()) + ") must be the whole line");
    }
    if (Upper(fields.front()) == "@REBOOT") {
      return ScheduleError("@reboot is not supported (a scheduler has no boot event)");
    }
    const auto expansion = ExpandMacro(fields.front());
    if (!expansion) {
      return ScheduleError("unknown macro \"" + std::string(fields.front()) +
                           "\" (expected @yearly, @annually, @monthly, @weekly, @daily, "
                           "@midnight or @hourly)");
    }
    return Parse(*expansion);
  }
  if (fields.size() != 5 && fields.size() != 6) {
    return ScheduleError("expected 5 or 6 fields, got " + std::to_string(fields.size()));
  }
  CronExpression expr;
  expr.has_seconds_ = fields.size() == 6;
  if (!expr.has_seconds_) fields.insert(fields.begin(), "0");
  const FieldSpec* specs[6] = {&kSecond, &kMinute, &kHour, &kDayOfMonth, &kMonth, &kDayOfWeek};
  ParsedField parsed[6];
  for (int i = 0; i < 6; ++i) {
    auto field = ParseField(*specs[i], fields[i]);
    if (!field.ok()) return field.status();
    parsed[i] = std::move(*field);
  }
  expr.seconds_ = parsed[0].bits;
  expr.minutes_ = parsed[1].bits;
  expr.hours_ = static_cast<std::uint32_t>(parsed[2].bits);
  expr.days_of_month_ = static_cast<std::uint32_t>(parsed[3].bits);
  expr.months_ = static_cast<std::uint32_t>(parsed[4].bits);
  expr.days_of_week_ = static_cast<std::uint32_t>(parsed[5].bits);
  expr.dom_star_ = parsed[3].starts_with_star;
  expr.dow_star_ = parsed[5].starts_with_star;
  expr.hour_wildcard_ = parsed[2].uses_star_or_step;
  for (int i = expr.has_seconds_ ? 0 : 1; i < 6; ++i) {
    expr.canonical_[i] = std::move(parsed[i].canonical);
  }

  // When only the day of the month decides (the day of the week is `*`), a line such as
  // `0 0 30 2 *` would never fire; reject it instead of searching forever.
  if (expr.dow_star_ && !expr.dom_star_) {
    bool possible = false;
    for (int m = 1; m <= 12 && !possible; ++m) {
      if (!HasBit(expr.months_, m)) continue;
      possible = NextBit(expr.days_of_month_, 1) <= kMaxDaysInMonth[m];
    }
    if (!possible) {
      return FieldError(kDayOfMonth, "none of the selected days exists in the selected months");
    }
  }
  return expr;
}

std::string CronExpression::ToString() const {
  std::string out;
  for (const std::string& field : canonical_) {
    if (field.empty()) continue;
    if (!out.empty()) out += ' ';
    out += field;
  }
  return out;
}

bool CronExpression::DayMatches(std::chrono::year_month_day ymd) const {
  const bool dom = HasBit(days_of_month_, static_cast<int>(static_cast<unsigned>(ymd.day())));
  const bool dow =
      HasBit(days_of_week_, static_cast<int>(std::chrono::weekday(local_days(ymd)).c_encoding()));
  // Vixie cron: if either day field starts with `*`, both must match; otherwise either may.
  return (dom_star_ || dow_star_) ? (dom && dow) : (dom || dow);
}

bool CronExpression::Matches(local_seconds t) const {
  const local_days day = std::chrono::floor<days>(t);
  const std::chrono::year_month_day ymd(day);
  const std::chrono::hh_mm_ss<seconds> tod(t - day);
  return HasBit(months_, static_cast<int>(static_cast<unsigned>(ymd.month()))) && DayMatches(ymd) &&
         HasBit(hours_, static_cast<int>(tod.hours().count())) &&
         HasBit(minutes_, static_cast<int>(tod.minutes().count())) &&
         HasBit(seconds_, static_cast<int>(tod.seconds().count()));
}

std::optional<local_seconds> CronExpression::NextMatch(local_seconds from,
                                                       local_seconds until) const {
  const local_days start_day = std::chrono::floor<days>(from);
  const std::chrono::year_month_day start(start_day);
  const std::chrono::hh_mm_ss<seconds> tod(from - start_day);
  int y = static_cast<int>(start.year());
  int mo = static_cast<int>(static_cast<unsigned>(start.month()));
  int d = static_cast<int>(static_cast<unsigned>(start.day()));
  int h = static_cast<int>(tod.hours().count());
  int mi = static_cast<int>(tod.minutes().count());
  int s = static_cast<int>(tod.seconds().count());

  // Each step either accepts the current value of a field or moves to the earliest candidate
  // after it (resetting the smaller fields), so time only moves forward and every loop either
  // returns or lands on a later candidate.
  while (true) {
    if (mo > 12) {
      ++y;
      mo = 1;
    }
    if (y > 9999) return std::nullopt;  // far beyond any tz rule; keeps the arithmetic bounded
    const int last_day = LastDay(y, mo);
    if (d > last_day) {
      ++mo;
      d = 1;
      h = mi = s = 0;
      continue;
    }
    if (h > 23) {
      ++d;
      h = mi = s = 0;
      continue;
    }
    if (mi > 59) {
      ++h;
      mi = s = 0;
      continue;
    }
    if (s > 59) {
      ++mi;
      s = 0;
      continue;
    }
    const std::chrono::year_month_day ymd{std::chrono::year{y},
                                          std::chrono::month{static_cast<unsigned>(mo)},
                                          std::chrono::day{static_cast<unsigned>(d)}};
    const local_seconds t = local_days(ymd) + hours(h) + minutes(mi) + seconds(s);
    if (t >= until) return std::nullopt;

    if (!HasBit(months_, mo)) {
      const int next = NextBit(months_, mo + 1);
      if (next < 0) {
        ++y;
        mo = NextBit(months_, 1);
      } else {
        mo = next;
      }
      d = 1;
      h = mi = s = 0;
      continue;
    }
    if (!DayMatches(ymd)) {
      // With the AND rule the day-of-month bits bound the candidates; with OR any day may match.
      const bool and_rule = dom_star_ || dow_star_;
      const int next = and_rule ? NextBit(days_of_month_, d + 1) : d + 1;
      d = next < 0 ? last_day + 1 : next;
      h = mi = s = 0;
      continue;
    }
    if (const int next = NextBit(hours_, h); next != h) {
      if (next < 0) {
        ++d;
        h = 0;
      } else {
        h = next;
      }
      mi = s = 0;
      continue;
    }
    if (const int next = NextBit(minutes_, mi); next != mi) {
      if (next < 0) {
        ++h;
        mi = 0;
      } else {
        mi = next;
      }
      s = 0;
      continue;
    }
    if (const int next = NextBit(seconds_, s); next != s) {
      if (next < 0) {
        ++mi;
        s = 0;
      } else {
        s = next;
      }
      continue;
    }
    return t;
  }
}

}  // namespace baton::internal
