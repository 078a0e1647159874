#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace llms {
namespace {

using Pieces = std::vector<std::string>;

Pieces split(std::string_view name, std::string_view text) {
  auto pt = PreTokenizer::create(name);
  EXPECT_TRUE(pt.ok()) << pt.status().to_string();
  if (!pt.ok()) return {};
  std::vector<std::string_view> views;
  (*pt)->split(text, &views);
  return Pieces(views.begin(), views.end());
}

TEST(PreTokenizerTest, Gpt2SplitsWordsContractionsNumbersAndKeepsTheLastSpaceForTheNextWord) {
  EXPECT_EQ(split("gpt-2", "Hello world's 123  foo\n"), (Pieces{"Hello", " world", "'s", " 123", " ", " foo", "\n"}));
  EXPECT_EQ(split("gpt-2", "a!?b"), (Pieces{"a", "!?", "b"}));
}

TEST(PreTokenizerTest, Llama3GroupsDigitsByThreeAndKeepsNewlinesApart) {
  EXPECT_EQ(split("llama3", "12345 abc"), (Pieces{"123", "45", " abc"}));
  EXPECT_EQ(split("llama-bpe", "I'M\n\n  x"), (Pieces{"I", "'M", "\n\n", " ", " x"}));
}

TEST(PreTokenizerTest, Qwen2SplitsEveryDigit) {
  EXPECT_EQ(split("qwen2", "x12345"), (Pieces{"x", "1", "2", "3", "4", "5"}));
}

TEST(PreTokenizerTest, DeepseekCoderAppliesItsSplitsInSequence) {
  EXPECT_EQ(split("deepseek-coder", "Hello, 世界123\n"), (Pieces{"Hello", ",", " ", "世界", "1", "2", "3", "\n"}));
}

TEST(PreTokenizerTest, StarcoderIsolatesDigitsBeforeTheGpt2Pattern) {
  EXPECT_EQ(split("starcoder", "abc123 def"), (Pieces{"abc", "1", "2", "3", " def"}));
}

TEST(PreTokenizerTest, FalconCutsNumbersIntoThreeDigitGroups) {
  EXPECT_EQ(split("falcon", "1234567"), (Pieces{"123", "456", "7"}));
}

TEST(PreTokenizerTest, LookaheadOnlyPatternsCutAtTheirMatchPositions) {
  EXPECT_EQ(split("superbpe", "1234567"), (Pieces{"1", "234", "567"}));
}

TEST(PreTokenizerTest, TekkenSplitsCamelCase) {
  EXPECT_EQ(split("tekken", "camelCaseWord"), (Pieces{"camel", "Case", "Word"}));
}

TEST(PreTokenizerTest, InvalidUtf8BytesBecomePiecesOfTheirOwn) {
  EXPECT_EQ(split("gpt-2",
                  "ab\xFF"
                  "cd"),
            (Pieces{"ab", "\xFF", "cd"}));
  EXPECT_EQ(split("llama3", "\xE2\x82"), (Pieces{"\xE2", "\x82"}));  // a truncated euro sign
}

TEST(PreTokenizerTest, VeryLongRunsOfOneClassSplitWithoutLosingBytes) {
  const std::string spaces(100000, ' ');
  EXPECT_EQ(split("gpt-2", spaces + "x"), (Pieces{std::string(99999, ' '), " x"}));
  const std::string letters(200000, 'a');
  EXPECT_EQ(split("llama3", letters), (Pieces{letters}));
}

TEST(PreTokenizerTest, EveryKnownNameCompilesAndCoversItsInputExactly) {
  const std::string text =
      "Hello WORLD, it's 2024! 日本語 テスト 한국어 Привет мир 🦙🚀 a\tb\r\n\n  x_y=1+2 <sentinel:7> "
      "\xF0\x9F";
  const auto names = PreTokenizer::known_names();
  EXPECT_GE(names.size(), 50u);
  for (const std::string& name : names) {
    auto pt = PreTokenizer::create(name);
    ASSERT_TRUE(pt.ok()) << name << ": " << pt.status().to_string();
    std::vector<std::string_view> pieces;
    (*pt)->split(text, &pieces);
    std::string joined;
    for (const auto p : pieces) {
      EXPECT_FALSE(p.empty()) << name;
      joined.append(p);
    }
    EXPECT_EQ(joined, text) << name;
  }
}

TEST(PreTokenizerTest, UnknownNameIsAnErrorThatListsTheKnownOnes) {
  auto pt = PreTokenizer::create("no-such-tokenizer");
  ASSERT_FALSE(pt.ok());
  EXPECT_EQ(pt.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(pt.status().message().find("no-such-tokenizer"), std::string::npos);
  EXPECT_NE(pt.status().message().find("llama3"), std::string::npos);
}

}  // namespace
}  // namespace llms
