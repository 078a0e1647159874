// The byte-level alphabet of GPT-2 style BPE: every byte 0..255 is written as one
// printable code point, so that token texts in the vocabulary are valid UTF-8.
// Printable Latin-1 bytes stand for themselves; the other 68 bytes map, in order,
// to U+0100 and up (the space 0x20 becomes U+0120 'Ġ', the newline U+010A 'Ċ').
//
// Thread-safety: pure functions over constant tables.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace llms {

// The code point that stands for byte `b`.
char32_t byte_to_code_point(uint8_t b);

// The byte that code point `cp` stands for, or -1 when `cp` is not in the alphabet.
int code_point_to_byte(char32_t cp);

// Raw bytes → alphabet text (UTF-8).
std::string byte_level_encode(std::string_view raw);

// Alphabet text → raw bytes. A code point outside the alphabet (added tokens of some
// converted vocabularies) is copied through as its UTF-8 bytes. Returns false when
// that happened, true when every code point was in the alphabet.
bool byte_level_decode(std::string_view text, std::string* out);

}  // namespace llms
