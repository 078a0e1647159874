#include "serving/precision_policy.h"

#include <gtest/gtest.h>

namespace llms {
namespace {

TEST(PrecisionPolicyTest, FirstVariantWhoseLimitsHoldTheRequest) {
  PrecisionPolicy p;
  p.prompt_max = {32, 128};
  p.max_tokens_max = {64, 256};
  EXPECT_EQ(choose_precision_variant(p, 32, 64, 3), 0);    // both at the first limits
  EXPECT_EQ(choose_precision_variant(p, 33, 64, 3), 1);    // prompt past the first
  EXPECT_EQ(choose_precision_variant(p, 10, 65, 3), 1);    // max_tokens past the first
  EXPECT_EQ(choose_precision_variant(p, 129, 10, 3), 2);   // past every limit: the most precise
  EXPECT_EQ(choose_precision_variant(p, 10, 257, 3), 2);
  EXPECT_EQ(choose_precision_variant(p, 1, 1, 1), 0);      // one variant serves everything
}

TEST(PrecisionPolicyTest, ValidateNamesTheKey) {
  PrecisionPolicy p;
  p.prompt_max = {32};
  p.max_tokens_max = {64};
  EXPECT_TRUE(p.validate(2).ok());
  EXPECT_NE(p.validate(3).message().find("precision_prompt_max"), std::string::npos);
  p.prompt_max = {32, 64};
  EXPECT_NE(p.validate(3).message().find("precision_max_tokens"), std::string::npos);
  p.max_tokens_max = {64, 0};
  EXPECT_NE(p.validate(3).message().find("at least 1"), std::string::npos);
  p.max_tokens_max = {64, 1};
  p.entropy_bound = -1;
  EXPECT_NE(p.validate(3).message().find("precision_entropy"), std::string::npos);
  p.entropy_bound = 2;
  p.window = 0;
  EXPECT_NE(p.validate(3).message().find("precision_window"), std::string::npos);
  EXPECT_FALSE(PrecisionPolicy{}.validate(0).ok());
}

TEST(PrecisionPolicyTest, ParsesLimitLists) {
  EXPECT_EQ(parse_precision_limits("32,128").value(), (std::vector<int>{32, 128}));
  EXPECT_TRUE(parse_precision_limits("").value().empty());
  for (const char* bad : {"32,", ",32", "x", "0", "-4", "3.5", "32,,1"}) {
    EXPECT_FALSE(parse_precision_limits(bad).ok()) << bad;
  }
}

TEST(PrecisionPolicyTest, ParsesVariantLists) {
  EXPECT_EQ(parse_precision_variants("q4_k,q8_0,f16").value(),
            (std::vector<DType>{DType::kQ4_K, DType::kQ8_0, DType::kF16}));
  for (const char* bad : {"", "q4_k,", "q9", "q4_k,,f16"}) EXPECT_FALSE(parse_precision_variants(bad).ok()) << bad;
}

TEST(PrecisionPolicyTest, EntropyWatchTakesTheMeanOfTheWindow) {
  EntropyWatch w(1.0, 3);
  EXPECT_FALSE(w.push(0.5));  // mean 0.5
  EXPECT_FALSE(w.push(1.5));  // mean 1.0: not above
  EXPECT_TRUE(w.push(1.3));   // mean (0.5 + 1.5 + 1.3) / 3 = 1.1
  EXPECT_FALSE(w.push(0.1));  // window now 1.5, 1.3, 0.1: mean 0.967
  w.reset();
  EXPECT_TRUE(w.push(1.2));   // a fresh start: the mean of one
  EntropyWatch off(0.0, 2);   // bound 0: never
  EXPECT_FALSE(off.push(50));
}

}  // namespace
}  // namespace llms
