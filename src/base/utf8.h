// UTF-8 helpers shared by the file reader (key validation), the tokenizers and the
// streaming decoder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace llms {

// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(std::string_view s);

// Length of the sequence a lead byte starts (1-4), or 0 for a continuation or invalid byte.
int utf8_sequence_length(uint8_t lead);

// Decodes the code point at s[pos]; on invalid input returns U+FFFD and consumes one
// byte. `consumed` receives the number of bytes used.
char32_t utf8_decode(std::string_view s, size_t pos, size_t* consumed);

void utf8_append(std::string& out, char32_t cp);

// Length of the longest prefix of `s` that does not end inside an incomplete (but so
// far valid) multi-byte sequence; what follows is held back by streaming decoders.
size_t utf8_complete_prefix(std::string_view s);

// Replaces every invalid sequence with U+FFFD.
std::string utf8_sanitize(std::string_view s);

}  // namespace llms
