#include "inspect/utf8_text.h"

namespace baton::internal {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the well-formed sequence at text[i], or 0 when it is ill-formed; *bad_len is then the
// length of its maximal subpart (at least 1), to be replaced by one U+FFFD.
std::size_t SequenceAt(std::string_view text, std::size_t i, std::size_t* bad_len) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  *bad_len = 1;
  if (b0 < 0x80) return 1;
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (std::size_t k = 1; k <= need; ++k) {
    if (i + k >= text.size()) return 0;
    const unsigned char b = byte(i + k);
    const bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return 0;
    *bad_len = k + 1;
  }
  return need + 1;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = SequenceAt(text, i, &bad);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string ValidUtf8(std::string_view text) {
  if (IsValidUtf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = SequenceAt(text, i, &bad);
    if (n == 0) {
      // `bad` counts the lead byte and the valid continuation bytes before the failure.
      out.append(kReplacement);
      i += bad;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

void MakeValidUtf8(nlohmann::json& document) {
  if (document.is_string()) {
    auto& s = document.get_ref<std::string&>();
    if (!IsValidUtf8(s)) s = ValidUtf8(s);
  } else if (document.is_array()) {
    for (auto& element : document) MakeValidUtf8(element);
  } else if (document.is_object()) {
    bool keys_ok = true;
    for (auto it = document.begin(); it != document.end(); ++it) {
      if (!IsValidUtf8(it.key())) keys_ok = false;
      MakeValidUtf8(it.value());
    }
    if (!keys_ok) {
      nlohmann::json fixed = nlohmann::json::object();
      for (auto it = document.begin(); it != document.end(); ++it) {
        fixed[ValidUtf8(it.key())] = std::move(it.value());
      }
      document = std::move(fixed);
    }
  }
}

}  // namespace baton::internal
