#include "benchserve/dataset.h"

#include <gtest/gtest.h>

#include <sstream>

namespace llms::benchserve {
namespace {

int words(const std::string& s) {
  std::istringstream in(s);
  std::string w;
  int n = 0;
  while (in >> w) ++n;
  return n;
}

TEST(Dataset, RandomPromptsHaveTheirLengthsAndRepeatWithTheSeed) {
  BenchOptions o;
  o.input_len = 40;
  o.output_len = 10;
  o.range_ratio = 0.5;
  const auto a = make_prompts(o, 50, 1).value();
  ASSERT_EQ(a.size(), 50u);
  bool varied = false;
  for (const auto& p : a) {
    EXPECT_GE(words(p.text), 20);
    EXPECT_LE(words(p.text), 60);
    EXPECT_GE(p.output_len, 5);
    EXPECT_LE(p.output_len, 15);
    varied |= p.output_len != a[0].output_len;
  }
  EXPECT_TRUE(varied);
  EXPECT_EQ(make_prompts(o, 50, 1).value()[7].text, a[7].text);
  EXPECT_NE(make_prompts(o, 50, 2).value()[7].text, a[7].text);
  o.range_ratio = 0;
  const auto fixed = make_prompts(o, 5, 1).value();
  for (const auto& p : fixed) EXPECT_EQ(words(p.text), 40);
}

TEST(Dataset, SharedPrefixPromptsShareTheirPrefixRoundRobin) {
  BenchOptions o;
  o.dataset = "shared-prefix";
  o.prefix_len = 30;
  o.input_len = 5;
  o.num_prefixes = 2;
  const auto p = make_prompts(o, 4, 3).value();
  const auto prefix = [](const std::string& s) { return s.substr(0, s.find('\n')); };
  EXPECT_EQ(prefix(p[0].text), prefix(p[2].text));
  EXPECT_EQ(prefix(p[1].text), prefix(p[3].text));
  EXPECT_NE(prefix(p[0].text), prefix(p[1].text));
  EXPECT_EQ(words(prefix(p[0].text)), 30);
  EXPECT_NE(p[0].text, p[2].text);  // own suffixes
}

TEST(Dataset, SonnetRepeatsLinesAfterAFixedInstruction) {
  BenchOptions o;
  o.dataset = "sonnet";
  o.input_len = 100;
  const auto p = make_prompts(o, 2, 0).value();
  const std::string first_line = p[0].text.substr(0, p[0].text.find('\n'));
  EXPECT_EQ(p[1].text.rfind(first_line, 0), 0u);
  EXPECT_GE(words(p[0].text), 100);
}

TEST(Dataset, ConversationFilesInTheirThreeShapes) {
  const std::string text =
      R"({"conversations":[{"from":"human","value":"hi there"},{"from":"gpt","value":"one two three"}]})" "\n"
      "\n"
      R"({"messages":[{"role":"user","content":"tell me"},{"role":"assistant","content":"a b"}]})" "\n"
      R"({"prompt":"just this","output_len":9})" "\n"
      R"({"conversations":[]})" "\n";
  const auto p = parse_conversations(text, "f.jsonl", 64).value();
  ASSERT_EQ(p.size(), 3u);  // the empty conversation is skipped
  EXPECT_EQ(p[0].text, "hi there");
  EXPECT_EQ(p[0].output_len, 3);  // the reply's words
  EXPECT_EQ(p[1].text, "tell me");
  EXPECT_EQ(p[1].output_len, 2);
  EXPECT_EQ(p[2].output_len, 9);
  const auto arr = parse_conversations(R"([{"prompt":"x"}])", "a.json", 5).value();
  ASSERT_EQ(arr.size(), 1u);
  EXPECT_EQ(arr[0].output_len, 5);
}

TEST(Dataset, BadInputsAreClearErrors) {
  EXPECT_NE(parse_conversations("{\"prompt\":\"a\"}\nnot json\n", "f.jsonl", 4).status().message().find("f.jsonl:2"),
            std::string::npos);
  EXPECT_NE(parse_conversations("{\"x\":1}\n", "f.jsonl", 4).status().message().find("no entry with a prompt"),
            std::string::npos);
  BenchOptions o;
  o.dataset = "sharegpt-nonexistent.jsonl";
  EXPECT_NE(make_prompts(o, 1, 0).status().message().find("neither random, shared-prefix, sonnet nor"),
            std::string::npos);
}

}  // namespace
}  // namespace llms::benchserve
