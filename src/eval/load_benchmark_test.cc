#include "eval/load_benchmark.h"

#include <gtest/gtest.h>

#include <cmath>

namespace llms {
namespace {

// Share of the requests whose output length is below `bound`.
double share_below(const std::vector<RequestParams>& rs, int bound) {
  int n = 0;
  for (const auto& r : rs) n += r.max_tokens < bound;
  return static_cast<double>(n) / static_cast<double>(rs.size());
}

TEST(LoadBenchmarkTest, RequestsStayInTheirRangesAndRepeatForASeed) {
  LoadSpec spec;
  spec.requests = 500;
  spec.prompt_min = 5, spec.prompt_max = 9, spec.output_min = 16, spec.output_max = 1024;
  for (bool log_uniform : {false, true}) {
    spec.output_log_uniform = log_uniform;
    const auto rs = make_load_requests(spec, 100);
    ASSERT_EQ(rs.size(), 500u);
    for (const auto& r : rs) {
      ASSERT_GE(r.prompt.size(), 5u);
      ASSERT_LE(r.prompt.size(), 9u);
      EXPECT_EQ(r.prompt[0], 1);
      for (size_t i = 1; i < r.prompt.size(); ++i) ASSERT_TRUE(r.prompt[i] >= 3 && r.prompt[i] < 100);
      ASSERT_GE(r.max_tokens, 16);
      ASSERT_LE(r.max_tokens, 1024);
      EXPECT_TRUE(r.ignore_eos);
      EXPECT_EQ(r.sampling.temperature, 0.0f);
    }
    const auto again = make_load_requests(spec, 100);
    for (size_t i = 0; i < rs.size(); ++i) ASSERT_EQ(rs[i].max_tokens, again[i].max_tokens);
  }
}

// Uniform: the share below b is (b - min) / (max - min + 1); log-uniform: it is
// ln(b / min) / ln((max + 1) / min), so 16-128 holds half of 16-1024 (8x of 64x).
TEST(LoadBenchmarkTest, OutputLengthsFollowTheChosenDistribution) {
  LoadSpec spec;
  spec.requests = 4000;
  spec.output_min = 16, spec.output_max = 1023;
  spec.output_log_uniform = false;
  EXPECT_NEAR(share_below(make_load_requests(spec, 100), 128), 112.0 / 1008.0, 0.02);
  spec.output_log_uniform = true;
  const auto rs = make_load_requests(spec, 100);
  EXPECT_NEAR(share_below(rs, 128), std::log(128.0 / 16) / std::log(1024.0 / 16), 0.03);
  EXPECT_NEAR(share_below(rs, 32), std::log(32.0 / 16) / std::log(1024.0 / 16), 0.03);
}

}  // namespace
}  // namespace llms
