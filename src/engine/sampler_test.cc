#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>

#include "base/random.h"
#include "engine/request.h"

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

// The distribution a draw follows, by the definition: candidates (masked tokens left
// out) sorted by scaled logit, softmax over the top k, the shortest prefix whose
// probability reaches top-p, then those of at least min-p times the top one's.
std::vector<double> reference_distribution(const SamplingParams& p, const std::vector<float>& logits) {
  std::vector<std::pair<double, int>> c;
  for (int i = 0; i < static_cast<int>(logits.size()); ++i) {
    if (logits[i] != -INFINITY) c.emplace_back(logits[i] / p.temperature, i);
  }
  std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  size_t n = p.top_k > 0 ? std::min(c.size(), static_cast<size_t>(p.top_k)) : c.size();
  std::vector<double> prob(n);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += prob[i] = std::exp(c[i].first - c[0].first);
  for (double& x : prob) x /= sum;
  double cum = 0.0;
  size_t keep = 0;
  while (keep < n && cum < p.top_p) cum += prob[keep++];
  n = keep;
  while (n > 1 && prob[n - 1] < p.min_p * prob[0]) --n;
  std::vector<double> out(logits.size(), 0.0);
  double kept = 0.0;
  for (size_t i = 0; i < n; ++i) kept += prob[i];
  for (size_t i = 0; i < n; ++i) out[static_cast<size_t>(c[i].second)] = prob[i] / kept;
  return out;
}

// A vocabulary of 300 random logits (some masked), against the definition: tokens
// outside the kept set never drawn, the others at their renormalised probability. The
// cut tokens span many of the nucleus search's keys.
TEST(SamplerTest, CutsOfALargeVocabularyFollowTheDefinition) {
  Rng rng(11);
  std::vector<float> logits(300);
  for (auto& x : logits) x = rng.next_u64() % 10 == 0 ? -INFINITY : static_cast<float>(rng.normal());
  struct Cut {
    float temperature, top_p, min_p;
    int top_k;
  };
  const Cut cuts[] = {{1.0f, 1.0f, 0.0f, 0},  {1.0f, 0.9f, 0.0f, 0},  {0.7f, 0.5f, 0.0f, 0}, {1.5f, 0.95f, 0.0f, 0},
                      {1.0f, 1.0f, 0.05f, 0}, {1.0f, 0.9f, 0.02f, 0}, {1.0f, 0.8f, 0.0f, 20}, {0.8f, 1.0f, 0.1f, 50}};
  for (const Cut& cut : cuts) {
    SCOPED_TRACE(::testing::Message() << "temperature " << cut.temperature << " top_p " << cut.top_p << " min_p "
                                      << cut.min_p << " top_k " << cut.top_k);
    SamplingParams p;
    p.temperature = cut.temperature, p.top_p = cut.top_p, p.min_p = cut.min_p, p.top_k = cut.top_k;
    const std::vector<double> want = reference_distribution(p, logits);
    int kept = 0;
    for (double x : want) kept += x > 0;
    EXPECT_GT(kept, 2);
    expect_frequencies(p, logits, want);
  }
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

// The engine's rule holds OpenAI's ranges (what the server answers 400 for), names the
// parameter, and checks logit_bias ids against the vocabulary once it is known.
TEST(SamplerTest, CheckHoldsTheApiRangesAndNamesTheParameter) {
  auto param_of = [](const SamplingParams& p, int vocab = 0) {
    const auto e = p.check(vocab);
    return e ? e->param : std::string("ok");
  };
  SamplingParams p;
  p.temperature = 2.0f;
  EXPECT_EQ(param_of(p), "ok");
  p.temperature = 2.5f;
  EXPECT_EQ(param_of(p), "temperature");
  p = {};
  p.repetition_penalty = 0.005f;
  EXPECT_EQ(param_of(p), "repetition_penalty");
  p.repetition_penalty = 0.01f;
  EXPECT_EQ(param_of(p), "ok");
  p.top_k = kMaxTopK + 1;
  EXPECT_EQ(param_of(p), "top_k");
  p = {};
  p.logit_bias = {{299, 5.0f}};
  EXPECT_EQ(param_of(p, 300), "ok");
  p.logit_bias = {{300, 5.0f}};
  EXPECT_EQ(param_of(p), "ok");  // the vocabulary is not known yet
  EXPECT_EQ(param_of(p, 300), "logit_bias");
  p.logit_bias = {{1, 101.0f}};
  EXPECT_EQ(param_of(p, 300), "logit_bias");
}

TEST(SamplerTest, RequestCheckNamesThePromptAndTheContext) {
  RequestParams r;
  r.prompt = {1, 2, 3};
  EXPECT_FALSE(check_request(r, 10, 8).has_value());
  r.prompt = {};
  EXPECT_EQ(check_request(r, 10, 8)->param, "prompt");
  r.prompt = {1, 10};
  EXPECT_EQ(check_request(r, 10, 8)->param, "prompt");
  r.prompt = std::vector<int32_t>(8, 1);  // no room for the first generated token
  const auto full = check_request(r, 10, 8);
  ASSERT_TRUE(full.has_value());
  EXPECT_TRUE(full->context_exceeded);
  r.prompt = {1};
  r.max_tokens = 0;
  EXPECT_EQ(check_request(r, 10, 8)->param, "max_tokens");
  r.max_tokens = 1;
  r.sampling.temperature = 3;
  EXPECT_EQ(check_request(r, 10, 8)->param, "temperature");
}

}  // namespace
}  // namespace llms
