#include "engine/output_check.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace llms {
namespace {

std::vector<std::string> kinds(const OutputFacts& f) {
  std::vector<std::string> out;
  for (const char* k : abnormal_output_kinds(f)) out.emplace_back(k);
  return out;
}

TEST(OutputCheckTest, RepeatedShareCountsTheLongestPeriodicRun) {
  // 1 2 3 then "7 8" five times: the run of period 2 covers 10 of 13 tokens.
  const std::vector<int32_t> t = {1, 2, 3, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8};
  EXPECT_DOUBLE_EQ(repeated_share(t), 10.0 / 13.0);
  const std::vector<int32_t> distinct = {1, 2, 3, 4, 5, 6};
  EXPECT_DOUBLE_EQ(repeated_share(distinct), 0.0);
  EXPECT_DOUBLE_EQ(repeated_share(std::vector<int32_t>(20, 4)), 1.0);
  EXPECT_EQ(repeated_share({}), 0.0);
}

TEST(OutputCheckTest, EachKindIsFlaggedAndNormalOutputsAreNot) {
  std::vector<int32_t> story;
  for (int i = 0; i < 40; ++i) story.push_back(100 + i);
  EXPECT_TRUE(kinds({story, "Once upon a time.", FinishReason::kStop, false}).empty());
  EXPECT_EQ(kinds({{}, "", FinishReason::kStop, false}), std::vector<std::string>{"empty"});
  std::vector<int32_t> loop;
  for (int i = 0; i < 30; ++i) loop.push_back(i % 3);
  EXPECT_EQ(kinds({loop, "a b c a b c", FinishReason::kStop, false}), std::vector<std::string>{"repetition"});
  // Shorter than 16 tokens: too short to call a loop.
  EXPECT_TRUE(kinds({std::span(loop).first(12), "a b c", FinishReason::kStop, false}).empty());
  EXPECT_EQ(kinds({story, "bad \xEF\xBF\xBD byte", FinishReason::kStop, false}), std::vector<std::string>{"invalid_utf8"});
  // Ending by max_tokens is what the client asked for, not a sign of a broken model.
  EXPECT_TRUE(kinds({story, "cut", FinishReason::kLength, false}).empty());
  EXPECT_TRUE(kinds({story, "cut", FinishReason::kLength, true}).empty());
  // Outputs the client or the clock cut short are not judged.
  EXPECT_TRUE(kinds({{}, "", FinishReason::kCancelled, false}).empty());
  EXPECT_TRUE(kinds({{}, "", FinishReason::kTimeout, false}).empty());
}

}  // namespace
}  // namespace llms
