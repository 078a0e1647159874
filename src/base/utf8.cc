#include "base/utf8.h"

namespace llms {

int utf8_sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xC2) return 0;  // continuation byte or overlong lead
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF5) return 4;
  return 0;
}

namespace {

// Validates the sequence at s[pos]; returns its length or 0 if invalid/incomplete.
// Sets *incomplete when the bytes so far are a valid prefix cut by the end of s.
size_t valid_sequence(std::string_view s, size_t pos, char32_t* cp, bool* incomplete) {
  *incomplete = false;
  const auto b0 = static_cast<uint8_t>(s[pos]);
  const int len = utf8_sequence_length(b0);
  if (len == 0) return 0;
  if (len == 1) {
    *cp = b0;
    return 1;
  }
  char32_t c = b0 & (0x7F >> len);
  for (int i = 1; i < len; ++i) {
    if (pos + i >= s.size()) {
      *incomplete = true;
      return 0;
    }
    const auto b = static_cast<uint8_t>(s[pos + i]);
    if ((b & 0xC0) != 0x80) return 0;
    // Second-byte ranges that exclude overlongs, surrogates and > U+10FFFF.
    if (i == 1) {
      if (b0 == 0xE0 && b < 0xA0) return 0;
      if (b0 == 0xED && b > 0x9F) return 0;
      if (b0 == 0xF0 && b < 0x90) return 0;
      if (b0 == 0xF4 && b > 0x8F) return 0;
    }
    c = (c << 6) | (b & 0x3F);
  }
  *cp = c;
  return static_cast<size_t>(len);
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    char32_t cp;
    bool incomplete;
    const size_t n = valid_sequence(s, pos, &cp, &incomplete);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

char32_t utf8_decode(std::string_view s, size_t pos, size_t* consumed) {
  char32_t cp = 0;
  bool incomplete;
  const size_t n = valid_sequence(s, pos, &cp, &incomplete);
  if (n == 0) {
    *consumed = 1;
    return 0xFFFD;
  }
  *consumed = n;
  return cp;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

size_t utf8_complete_prefix(std::string_view s) {
  // Only the last 3 bytes can start an unfinished sequence.
  const size_t start = s.size() > 3 ? s.size() - 3 : 0;
  for (size_t pos = start; pos < s.size(); ++pos) {
    const auto b = static_cast<uint8_t>(s[pos]);
    if ((b & 0xC0) == 0x80) continue;
    char32_t cp;
    bool incomplete;
    valid_sequence(s, pos, &cp, &incomplete);
    if (incomplete) return pos;
  }
  return s.size();
}

std::string utf8_sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    size_t n;
    const char32_t cp = utf8_decode(s, pos, &n);
    if (cp == 0xFFFD && !(n == 3 && s.substr(pos, 3) == "\xEF\xBF\xBD")) {
      utf8_append(out, 0xFFFD);
    } else {
      out.append(s.substr(pos, n));
    }
    pos += n;
  }
  return out;
}

}  // namespace llms
