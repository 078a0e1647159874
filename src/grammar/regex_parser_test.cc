#include "grammar/regex_parser.h"

#include <gtest/gtest.h>

#include "grammar/testing/grammar_test_util.h"

namespace llms {
namespace {

using testing::matches;

std::shared_ptr<const Grammar> full(const std::string& pattern) {
  auto g = parse_regex(pattern);
  EXPECT_TRUE(g.ok()) << pattern << ": " << g.status().to_string();
  return g.ok() ? std::make_shared<const Grammar>(std::move(g).value()) : nullptr;
}

// A grammar for a JSON Schema pattern: a search, written as JSON string content.
std::shared_ptr<const Grammar> search_in_json(const std::string& pattern) {
  auto e = regex_to_expr(pattern, RegexOptions{RegexUse::kSearch, true});
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  GrammarBuilder b;
  const int32_t root = b.declare("root");
  b.define(root, std::move(e).value());
  auto g = b.build(root);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return std::make_shared<const Grammar>(std::move(g).value());
}

std::string error_of(const std::string& pattern) {
  auto g = parse_regex(pattern);
  return g.ok() ? "" : g.status().message();
}

TEST(Regex, FullMatchOfTheBasics) {
  auto g = full("a(b|cd)*e?");
  EXPECT_TRUE(matches(g, "a"));
  EXPECT_TRUE(matches(g, "abcdb"));
  EXPECT_TRUE(matches(g, "abe"));
  EXPECT_FALSE(matches(g, "ac"));
  EXPECT_FALSE(matches(g, "abee"));
  EXPECT_FALSE(matches(g, "xa"));
}

TEST(Regex, ClassesAndEscapes) {
  auto g = full(R"([A-Z][a-z\d_]{2,3}\.\s\u00e9[^x-z])");
  EXPECT_TRUE(matches(g, "Ab1_. \xC3\xA9w"));
  EXPECT_TRUE(matches(g, "Zzz.\t\xC3\xA9\xE2\x82\xAC"));  // [^x-z] takes a 3-byte character
  EXPECT_FALSE(matches(g, "Ab. \xC3\xA9w"));               // {2,3} needs two
  EXPECT_FALSE(matches(g, "Ab1_x \xC3\xA9w"));             // \. is a literal dot
  EXPECT_FALSE(matches(g, "Ab1_. \xC3\xA9y"));
}

TEST(Regex, DotIsAnyCharacterButALineBreak) {
  auto g = full("a.c");
  EXPECT_TRUE(matches(g, "abc"));
  EXPECT_TRUE(matches(g, "a\xF0\x9F\x98\x80" "c"));
  EXPECT_FALSE(matches(g, "a\nc"));
}

TEST(Regex, AnchorsAndLazyQuantifiersInFullMatch) {
  auto g = full("^x+?y{1,}?$");
  EXPECT_TRUE(matches(g, "xxyy"));
  EXPECT_FALSE(matches(g, "y"));
}

TEST(Regex, OneQuantifierPerAtomAsEcma) {
  for (const char* bad : {"a++", "a*+", ".{2}{3}", "(ab)?*", "a+?+"}) {
    auto g = parse_regex(bad);
    ASSERT_FALSE(g.ok()) << bad;
    EXPECT_NE(g.status().message().find("nothing to repeat"), std::string::npos) << g.status().message();
  }
  EXPECT_TRUE(parse_regex("a+?b??c{1,2}?").ok());  // lazy quantifiers are one quantifier
}

TEST(Regex, BraceThatIsNotAQuantifierIsALiteral) {
  auto g = full("a{b}");
  EXPECT_TRUE(matches(g, "a{b}"));
}

TEST(Regex, SearchInsideAJsonString) {
  auto g = search_in_json("ab");
  EXPECT_TRUE(matches(g, "ab"));
  EXPECT_TRUE(matches(g, "xxabyy"));
  EXPECT_TRUE(matches(g, "\\\"ab\\n"));  // escapes around the match are fine
  EXPECT_FALSE(matches(g, "a\\u0062"));  // the match itself is written raw
  EXPECT_FALSE(matches(g, "axb"));
  auto anchored = search_in_json("^a[0-9]$|^z");
  EXPECT_TRUE(matches(anchored, "a5"));
  EXPECT_TRUE(matches(anchored, "zzz"));
  EXPECT_FALSE(matches(anchored, "a5x"));
  EXPECT_FALSE(matches(anchored, "xz"));
}

TEST(Regex, JsonModeEscapesWhatJsonMustEscape) {
  auto g = search_in_json(R"(^"\\\n$)");  // the string value: quote, backslash, newline
  EXPECT_TRUE(matches(g, R"(\"\\\u000a)"));
  EXPECT_TRUE(matches(g, R"(\"\\\n)"));
  EXPECT_FALSE(matches(g, "\"\\\n"));  // raw forms are not JSON string content
}

TEST(Regex, RefusalsNameTheConstruct) {
  EXPECT_EQ(error_of("(a)\\1"), "regex: back-references are not supported at offset 4");
  EXPECT_EQ(error_of("a(?=b)"), "regex: lookaround assertions are not supported at offset 2");
  EXPECT_EQ(error_of("(?i)a"), "regex: inline flags and other (?...) groups are not supported at offset 1");
  EXPECT_EQ(error_of("\\bword"), "regex: word boundaries (\\b) are not supported at offset 1");
  EXPECT_EQ(error_of("a^b"), "regex: '^' is only supported at the start of the pattern at offset 1");
  EXPECT_EQ(error_of("(a$)"), "regex: '$' is only supported at the end of the pattern at offset 2");
  EXPECT_EQ(error_of("*a"), "regex: nothing to repeat before '*' at offset 0");
  EXPECT_EQ(error_of("(ab"), "regex: missing ')' at offset 3");
  EXPECT_EQ(error_of("ab)"), "regex: unmatched ')' at offset 2");
  EXPECT_EQ(error_of("[z-a]"), "regex: character range is reversed at offset 4");
  EXPECT_EQ(error_of("\\q"), "regex: unknown escape '\\q' at offset 1");
}

}  // namespace
}  // namespace llms
