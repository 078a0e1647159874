#include "base/utf8.h"

#include <gtest/gtest.h>

namespace llms {
namespace {

TEST(Utf8Test, Validation) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é € 😀
  EXPECT_FALSE(is_valid_utf8("\xC0\x80"));          // overlong NUL
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));          // cut
  EXPECT_FALSE(is_valid_utf8("\x80"));
}

TEST(Utf8Test, DecodeAndAppendRoundTrip) {
  for (char32_t cp : {U'A', U'\u00e9', U'\u20ac', U'\U0001F600', U'\U0010FFFF'}) {
    std::string s;
    utf8_append(s, cp);
    size_t n;
    EXPECT_EQ(utf8_decode(s, 0, &n), cp);
    EXPECT_EQ(n, s.size());
  }
}

TEST(Utf8Test, CompletePrefixHoldsBackUnfinishedSequences) {
  EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
  EXPECT_EQ(utf8_complete_prefix("ab\xE2\x82"), 2u);     // € cut after 2 of 3 bytes
  EXPECT_EQ(utf8_complete_prefix("ab\xE2\x82\xAC"), 5u);
  EXPECT_EQ(utf8_complete_prefix("\xF0\x9F\x98"), 0u);
  EXPECT_EQ(utf8_complete_prefix("a\xFF"), 2u);  // invalid bytes are not held back
}

TEST(Utf8Test, SanitizeReplacesInvalidBytes) {
  EXPECT_EQ(utf8_sanitize("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(utf8_sanitize("ok \xE2\x82\xAC"), "ok \xE2\x82\xAC");
}

}  // namespace
}  // namespace llms
