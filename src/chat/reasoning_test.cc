#include "chat/reasoning.h"

#include <gtest/gtest.h>

#include <random>

namespace llms {
namespace {

ReasoningSplitter::Split whole(std::string_view text, bool opened = false) {
  ReasoningSplitter s(opened);
  ReasoningSplitter::Split a = s.push(text), b = s.finish();
  return {a.reasoning + b.reasoning, a.content + b.content};
}

TEST(ReasoningSplitter, SplitsThinkingFromTheAnswer) {
  auto s = whole("<think>\nLet me see.\n</think>\n\nParis.");
  EXPECT_EQ(s.reasoning, "\nLet me see.\n");
  EXPECT_EQ(s.content, "Paris.");
  s = whole("  <think>a</think>b");
  EXPECT_EQ(s.reasoning, "a");
  EXPECT_EQ(s.content, "b");
}

TEST(ReasoningSplitter, NoThinkingIsAllContent) {
  auto s = whole("Paris. <think> is a tag");
  EXPECT_EQ(s.reasoning, "");
  EXPECT_EQ(s.content, "Paris. <think> is a tag");
  s = whole("<thi");  // a start of the tag that never completes
  EXPECT_EQ(s.content, "<thi");
}

// The template opened the block (Qwen3, DeepSeek-R1); cut before </think>: all reasoning.
TEST(ReasoningSplitter, OpenedByThePromptAndCutShort) {
  EXPECT_TRUE(ReasoningSplitter::prompt_opens_thinking("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(ReasoningSplitter::prompt_opens_thinking("<|im_start|>assistant\n"));
  auto s = whole("hmm</think>ok", true);
  EXPECT_EQ(s.reasoning, "hmm");
  EXPECT_EQ(s.content, "ok");
  s = whole("still thinking</thi", true);
  EXPECT_EQ(s.reasoning, "still thinking</thi");
  EXPECT_EQ(s.content, "");
}

// Any cut of the text into pieces gives what the whole text gives, and nothing that
// could still be a marker is released early.
TEST(ReasoningSplitter, PiecesAgreeWithTheWhole) {
  const std::string texts[] = {"<think>\nab </think>\n cd", "<think></think>x", " plain <think>y</think>",
                               "<think>a</thinkb</think> c</think>", "<thin"};
  std::mt19937 rng(7);
  for (const std::string& text : texts) {
    const auto want = whole(text);
    for (int trial = 0; trial < 50; ++trial) {
      ReasoningSplitter s;
      ReasoningSplitter::Split got;
      size_t at = 0;
      while (at < text.size()) {
        const size_t n = std::uniform_int_distribution<size_t>(1, 4)(rng);
        auto p = s.push(std::string_view(text).substr(at, n));
        got.reasoning += p.reasoning;
        got.content += p.content;
        at += n;
      }
      auto p = s.finish();
      EXPECT_EQ(got.reasoning + p.reasoning, want.reasoning) << text;
      EXPECT_EQ(got.content + p.content, want.content) << text;
    }
  }
}

}  // namespace
}  // namespace llms
