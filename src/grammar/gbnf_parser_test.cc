#include "grammar/gbnf_parser.h"

#include <gtest/gtest.h>

#include "grammar/testing/grammar_test_util.h"

namespace llms {
namespace {

std::string error_of(const std::string& text) {
  auto g = parse_gbnf(text);
  return g.ok() ? "" : g.status().message();
}

TEST(Gbnf, LowersRepetitionIntoLoopRules) {
  auto g = parse_gbnf(R"(root ::= "a" [0-9]* "b"?)");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  // x* is a right-recursive loop, x? a choice with the empty text.
  EXPECT_EQ(g->to_gbnf(),
            "root ::= \"a\" star-1 opt-2\n"
            "star-1 ::= [0-9] star-1 | \"\"\n"
            "opt-2 ::= \"b\" | \"\"\n");
}

TEST(Gbnf, RepetitionOfAnAlternationStaysInOneRule) {
  auto g = parse_gbnf(R"(root ::= ("x" | "yz")*)");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->to_gbnf(), "root ::= star-1\nstar-1 ::= \"x\" star-1 | \"y\" \"z\" star-1 | \"\"\n");
}

// Found by the grammar fuzzer: each level of ".++++..." was a loop rule of its own,
// and compiling 60 levels took longer than 20 s.
TEST(Gbnf, RepetitionOfARepetitionIsOneLoop) {
  for (const char* nested : {R"(root ::= [a-z]+++++++)", R"(root ::= (([a-z]+)+)+)", R"(root ::= [a-z]+*?+)",
                             R"(root ::= ([a-z]?)+)"}) {
    auto g = parse_gbnf(nested);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    EXPECT_LE(g->rules().size(), 2u) << nested << "\n" << g->to_gbnf();
  }
  // The language is kept: (x{2,}){3,} is x{6,}; (x{2,})* is not x*.
  auto six = parse_gbnf(R"(root ::= ("a"{2,}){3,})");
  ASSERT_TRUE(six.ok());
  auto g6 = std::make_shared<const Grammar>(std::move(six).value());
  EXPECT_FALSE(testing::matches(g6, "aaaaa"));
  EXPECT_TRUE(testing::matches(g6, "aaaaaa"));
  EXPECT_TRUE(testing::matches(g6, "aaaaaaa"));
  auto pairs = parse_gbnf(R"(root ::= ("a"{2,})*)");
  ASSERT_TRUE(pairs.ok());
  auto gp = std::make_shared<const Grammar>(std::move(pairs).value());
  EXPECT_TRUE(testing::matches(gp, ""));
  EXPECT_FALSE(testing::matches(gp, "a"));
  EXPECT_TRUE(testing::matches(gp, "aaa"));
  auto none = parse_gbnf(R"(root ::= "b" ("a"+){0} "c")");
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  auto gn = std::make_shared<const Grammar>(std::move(none).value());
  EXPECT_TRUE(testing::matches(gn, "bc"));
  EXPECT_FALSE(testing::matches(gn, "bac"));
}

TEST(Gbnf, BoundedRepetitionIsAChain) {
  auto g = parse_gbnf(R"(root ::= [a]{1,3})");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->to_gbnf(), "root ::= \"a\" opt-2\nopt-1 ::= \"a\" | \"\"\nopt-2 ::= \"a\" opt-1 | \"\"\n");
}

TEST(Gbnf, EscapesAndUnicode) {
  auto g = parse_gbnf(R"(root ::= "\x41\u00e9\n" [\u4e00-\u4e01])");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->to_gbnf(), "root ::= \"A\" \"\\xC3\" \"\\xA9\" \"\\x0A\" [\\u4E00-\\u4E01]\n");
}

TEST(Gbnf, ContinuationLinesAndComments) {
  auto g = parse_gbnf("# header\nroot ::= a # trailing\n     | b\na ::= \"a\"\nb ::= (\n  \"b\"\n)\n");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->to_gbnf(), "root ::= a | b\na ::= \"a\"\nb ::= \"b\"\n");
}

TEST(Gbnf, ErrorsNameTheProblemAndWhere) {
  EXPECT_EQ(error_of("rot ::= \"a\""), "grammar: there is no 'root' rule");
  EXPECT_EQ(error_of("root ::= x"), "grammar: rule 'x' is used at line 1, column 11 but never defined");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""), "grammar: rule 'root' is defined twice at line 2, column 1");
  EXPECT_EQ(error_of("root ::= \"a"), "grammar: unterminated literal at line 1, column 12");
  EXPECT_EQ(error_of("root ::= [a-"), "grammar: unterminated character class at line 1, column 13");
  EXPECT_EQ(error_of("root ::= <think>"), "grammar: token references (<...>) are not supported at line 1, column 10");
  EXPECT_EQ(error_of("root ::= \"\\q\""), "grammar: unknown escape '\\q' at line 1, column 12");
  EXPECT_EQ(error_of("root ::= root \"a\" | \"b\""),
            "grammar: the grammar is left-recursive (root -> root); rewrite it with repetition");
  EXPECT_EQ(error_of("root ::= x\nx ::= y? x \"a\" | \"b\"\ny ::= \"c\""),
            "grammar: the grammar is left-recursive (x -> x); rewrite it with repetition");
  EXPECT_EQ(error_of("root ::= \"a\" x\nx ::= \"b\" x"),
            "grammar: rule 'x' can never finish: every alternative needs itself again or an empty character class");
  EXPECT_EQ(error_of("root ::= \"a\"{3,1}"), "grammar: repetition {m,n} needs m <= n at line 1, column 13");
  EXPECT_EQ(error_of("root ::= \"a\"{5000}"),
            "grammar: repetition {5000,5000} is out of range (bounds must be 0..4096, min <= max)");
  EXPECT_EQ(error_of("root ::= (\"a\""), "grammar: expected ')' at line 1, column 14");
}

TEST(Gbnf, NestingDepthIsBounded) {
  const std::string deep = "root ::= " + std::string(300, '(') + "\"a\"" + std::string(300, ')');
  EXPECT_EQ(error_of(deep), "grammar: groups are nested too deeply at line 1, column 267");
}

}  // namespace
}  // namespace llms
