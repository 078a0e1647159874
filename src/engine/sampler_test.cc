#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>

#include "base/random.h"

namespace llms {
namespace {

std::vector<float> log_probs(std::vector<float> p) {
  for (auto& x : p) x = std::log(x);
  return p;
}

// The greedy argmax against std::max_element itself, on rows with ties, NaNs, signed
// zeros and infinities at random places, and lengths around the lane count.
TEST(SamplerTest, FirstMaxIndexIsMaxElement) {
  Rng rng(3);
  const float specials[] = {std::nanf(""), -0.0f, 0.0f, INFINITY, -INFINITY, 1.0f};
  for (int round = 0; round < 2000; ++round) {
    const int n = 1 + static_cast<int>(rng.next_u64() % 70);
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) {
      const uint64_t r = rng.next_u64();
      // Few distinct values make ties common.
      v = r % 4 == 0 ? specials[(r >> 8) % std::size(specials)] : static_cast<float>((r >> 16) % 5) - 2.0f;
    }
    const auto want = static_cast<int32_t>(std::max_element(x.begin(), x.end()) - x.begin());
    ASSERT_EQ(first_max_index(x.data(), n), want) << "round " << round;
  }
}

TEST(SamplerTest, GreedyTakesFirstMaximum) {
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s(p, 1, {});
  const std::vector<float> l = {0.1f, 3.0f, -1.0f, 3.0f};
  EXPECT_EQ(s.sample(l.data(), 4), 1);
}

TEST(SamplerTest, SameSeedSameDrawsDifferentSeedDiffers) {
  SamplingParams p;
  p.seed = 42;
  const auto l = log_probs({0.25f, 0.25f, 0.25f, 0.25f});
  Sampler a(p, 0, {}), b(p, 999, {});  // explicit seed wins over the fallback
  SamplingParams q;
  q.seed = 43;
  Sampler c(q, 0, {});
  int differ = 0;
  for (int i = 0; i < 200; ++i) {
    const int32_t x = a.sample(l.data(), 4);
    EXPECT_EQ(x, b.sample(l.data(), 4));
    differ += x != c.sample(l.data(), 4);
  }
  EXPECT_GT(differ, 50);
}

// Empirical frequencies within 5 standard deviations of the expected share.
void expect_frequencies(const SamplingParams& p, const std::vector<float>& logits, const std::vector<double>& expected) {
  Sampler s(p, 7, {});
  const int n = 100000;
  std::vector<int> counts(logits.size());
  for (int i = 0; i < n; ++i) counts[s.sample(logits.data(), static_cast<int>(logits.size()))]++;
  for (size_t t = 0; t < logits.size(); ++t) {
    const double sd = std::sqrt(expected[t] * (1 - expected[t]) / n);
    EXPECT_NEAR(counts[t] / static_cast<double>(n), expected[t], 5 * sd + 1e-9) << "token " << t;
  }
}

TEST(SamplerTest, TemperatureOneFollowsTheDistribution) {
  expect_frequencies(SamplingParams{}, log_probs({0.5f, 0.3f, 0.2f}), {0.5, 0.3, 0.2});
}

TEST(SamplerTest, TemperatureSharpens) {
  SamplingParams p;
  p.temperature = 0.5f;  // p^2 renormalised: 0.25, 0.09, 0.04 over 0.38
  expect_frequencies(p, log_probs({0.5f, 0.3f, 0.2f}), {0.25 / 0.38, 0.09 / 0.38, 0.04 / 0.38});
}

TEST(SamplerTest, TopKTopPMinPCutTheTail) {
  SamplingParams k;
  k.top_k = 2;
  expect_frequencies(k, log_probs({0.5f, 0.3f, 0.2f}), {0.625, 0.375, 0.0});
  SamplingParams tp;
  tp.top_p = 0.6f;  // 0.5 < 0.6, 0.5 + 0.3 >= 0.6: keep two
  expect_frequencies(tp, log_probs({0.5f, 0.3f, 0.2f}), {0.625, 0.375, 0.0});
  SamplingParams mp;
  mp.min_p = 0.5f;  // cutoff 0.25: keeps 0.5 and 0.3
  expect_frequencies(mp, log_probs({0.5f, 0.3f, 0.2f}), {0.625, 0.375, 0.0});
}

TEST(SamplerTest, Penalties) {
  const std::vector<float> l = {2.0f, 1.9f, 0.0f};
  SamplingParams rep;
  rep.temperature = 0.0f;
  rep.repetition_penalty = 2.0f;
  const std::vector<int32_t> prompt = {0};
  Sampler r(rep, 1, prompt);
  EXPECT_EQ(r.sample(l.data(), 3), 1);  // 2.0 / 2 = 1.0 < 1.9

  SamplingParams pres;
  pres.temperature = 0.0f;
  pres.presence_penalty = 0.5f;
  Sampler p(pres, 1, prompt);  // presence counts output only
  EXPECT_EQ(p.sample(l.data(), 3), 0);
  p.accept(0);
  EXPECT_EQ(p.sample(l.data(), 3), 1);  // 2.0 - 0.5 = 1.5 < 1.9

  SamplingParams freq;
  freq.temperature = 0.0f;
  freq.frequency_penalty = 0.04f;
  Sampler f(freq, 1, {});
  f.accept(0);
  EXPECT_EQ(f.sample(l.data(), 3), 0);  // 2.0 - 0.04 = 1.96
  f.accept(0);
  f.accept(0);
  EXPECT_EQ(f.sample(l.data(), 3), 1);  // 2.0 - 0.12 = 1.88
}

TEST(SamplerTest, LogprobsAreLogSoftmax) {
  const std::vector<float> l = {0.0f, std::log(3.0f)};
  EXPECT_NEAR(Sampler::logprob_of(l.data(), 2, 0).logprob, std::log(0.25), 1e-6);
  const auto top = Sampler::top_logprobs(l.data(), 2, 5);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].token, 1);
  EXPECT_NEAR(top[0].logprob, std::log(0.75), 1e-6);
}

TEST(SamplerTest, EntropyIsThatOfTheSoftmax) {
  // p = (1/4, 3/4): H = -(1/4 ln 1/4 + 3/4 ln 3/4), by hand.
  const std::vector<float> two = {0.0f, std::log(3.0f)};
  EXPECT_NEAR(Sampler::entropy(two.data(), 2), -(0.25 * std::log(0.25) + 0.75 * std::log(0.75)), 1e-6);
  // Uniform over 8: ln 8. One-hot (a gap of 1000): 0.
  const std::vector<float> uniform(8, 1.5f);
  EXPECT_NEAR(Sampler::entropy(uniform.data(), 8), std::log(8.0), 1e-6);
  const std::vector<float> onehot = {1000.0f, 0.0f, 0.0f};
  EXPECT_NEAR(Sampler::entropy(onehot.data(), 3), 0.0, 1e-9);
}

TEST(SamplerTest, ValidateNamesTheParameter) {
  SamplingParams p;
  p.top_p = 0.0f;
  EXPECT_NE(p.validate().message().find("top_p"), std::string::npos);
  p = {};
  p.temperature = -1;
  EXPECT_NE(p.validate().message().find("temperature"), std::string::npos);
  p = {};
  p.presence_penalty = 3;
  EXPECT_FALSE(p.validate().ok());
  EXPECT_TRUE(SamplingParams{}.validate().ok());
}

}  // namespace
}  // namespace llms
