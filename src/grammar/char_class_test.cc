#include "grammar/char_class.h"

#include <gtest/gtest.h>

#include <string>

namespace llms {
namespace {

// Runs the class's DFA over `bytes`: 1 when they are exactly one member, 0 when a
// prefix is still open, -1 when refused.
int run(const CharClass& c, const std::string& bytes) {
  int state = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int16_t next = c.next(state, static_cast<uint8_t>(bytes[i]));
    if (next == CharClass::kReject) return -1;
    if (next == CharClass::kComplete) return i + 1 == bytes.size() ? 1 : -1;
    state = next;
  }
  return 0;
}

TEST(CharClass, NormalizeMergesAndDropsSurrogates) {
  const CodepointRanges r = normalize_ranges({{'c', 'e'}, {'a', 'b'}, {0xD000, 0xE000}, {'x', 'x'}});
  const CodepointRanges want = {{'a', 'e'}, {'x', 'x'}, {0xD000, 0xD7FF}, {0xE000, 0xE000}};
  EXPECT_EQ(r, want);
}

TEST(CharClass, ComplementCoversEverythingElse) {
  const CodepointRanges r = complement_ranges(normalize_ranges({{'a', 'a'}}));
  const CodepointRanges want = {{0, 'a' - 1}, {'a' + 1, 0xD7FF}, {0xE000, kMaxCodepoint}};
  EXPECT_EQ(r, want);
}

TEST(CharClass, TwoByteMember) {
  const CharClass c({{0xE9, 0xE9}});  // é = C3 A9
  EXPECT_EQ(run(c, "\xC3\xA9"), 1);
  EXPECT_EQ(run(c, "\xC3"), 0);
  EXPECT_EQ(run(c, "\xC3\xA8"), -1);
  EXPECT_EQ(run(c, "e"), -1);
}

TEST(CharClass, NegatedAsciiAcceptsEveryLengthOfUtf8) {
  const CharClass c(complement_ranges(normalize_ranges({{'a', 'a'}})));
  EXPECT_EQ(run(c, "a"), -1);
  EXPECT_EQ(run(c, "b"), 1);
  EXPECT_EQ(run(c, "\xC3\xA9"), 1);          // é
  EXPECT_EQ(run(c, "\xE2\x82\xAC"), 1);      // €
  EXPECT_EQ(run(c, "\xF0\x9F\x98\x80"), 1);  // U+1F600
  EXPECT_EQ(run(c, "\xF4\x8F\xBF\xBF"), 1);  // U+10FFFF
}

TEST(CharClass, RefusesIllFormedUtf8) {
  const CharClass c({{0, kMaxCodepoint}});
  EXPECT_EQ(run(c, "\xC0\x80"), -1);          // overlong NUL
  EXPECT_EQ(run(c, "\xE0\x80\x80"), -1);      // overlong
  EXPECT_EQ(run(c, "\xED\xA0\x80"), -1);      // surrogate U+D800
  EXPECT_EQ(run(c, "\xF4\x90\x80\x80"), -1);  // U+110000
  EXPECT_EQ(run(c, "\x80"), -1);              // lone continuation
  EXPECT_EQ(run(c, "\xED\x9F\xBF"), 1);       // U+D7FF, just below the surrogates
}

TEST(CharClass, RangeAcrossEncodedLengths) {
  const CharClass c({{0x7E, 0x801}});  // "~" .. U+0801 spans 1-, 2- and 3-byte forms
  EXPECT_EQ(run(c, "~"), 1);
  EXPECT_EQ(run(c, "\x7F"), 1);
  EXPECT_EQ(run(c, "\xC2\x80"), 1);
  EXPECT_EQ(run(c, "\xDF\xBF"), 1);      // U+07FF
  EXPECT_EQ(run(c, "\xE0\xA0\x80"), 1);  // U+0800
  EXPECT_EQ(run(c, "\xE0\xA0\x81"), 1);  // U+0801
  EXPECT_EQ(run(c, "\xE0\xA0\x82"), -1); // U+0802
  EXPECT_EQ(run(c, "}"), -1);
}

}  // namespace
}  // namespace llms
