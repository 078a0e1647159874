#include "tokenizer/byte_level.h"

#include <array>

#include "base/utf8.h"

namespace llms {

namespace {

struct ByteTables {
  std::array<char32_t, 256> to_cp{};
  // Every code point of the alphabet is below U+0144.
  std::array<int16_t, 0x144> to_byte{};
};

bool stands_for_itself(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

ByteTables make_tables() {
  ByteTables t;
  t.to_byte.fill(-1);
  char32_t next = 0x100;
  for (int b = 0; b < 256; ++b) {
    const char32_t cp = stands_for_itself(b) ? static_cast<char32_t>(b) : next++;
    t.to_cp[b] = cp;
    t.to_byte[cp] = static_cast<int16_t>(b);
  }
  return t;
}

const ByteTables& tables() {
  static const ByteTables t = make_tables();
  return t;
}

}  // namespace

char32_t byte_to_code_point(uint8_t b) { return tables().to_cp[b]; }

int code_point_to_byte(char32_t cp) {
  const auto& t = tables();
  return cp < t.to_byte.size() ? t.to_byte[cp] : -1;
}

std::string byte_level_encode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size() * 2);
  for (const char c : raw) utf8_append(out, byte_to_code_point(static_cast<uint8_t>(c)));
  return out;
}

bool byte_level_decode(std::string_view text, std::string* out) {
  bool all_in_alphabet = true;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = 0;
    const char32_t cp = utf8_decode(text, pos, &n);
    const int b = code_point_to_byte(cp);
    if (b >= 0) {
      out->push_back(static_cast<char>(b));
    } else {
      out->append(text.substr(pos, n));
      all_in_alphabet = false;
    }
    pos += n;
  }
  return all_in_alphabet;
}

}  // namespace llms
