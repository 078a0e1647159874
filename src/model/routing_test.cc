#include "model/routing.h"

#include <gtest/gtest.h>

#include <cmath>

namespace llms {
namespace {

// Softmax probabilities of one row, computed here in double.
std::vector<double> softmax(const std::vector<float>& l) {
  double mx = l[0], sum = 0;
  for (float v : l) mx = std::max(mx, static_cast<double>(v));
  std::vector<double> p;
  for (float v : l) sum += std::exp(v - mx);
  for (float v : l) p.push_back(std::exp(v - mx) / sum);
  return p;
}

TEST(ExpertRoutingTest, TopKByProbabilityGroupedByExpert) {
  // Token 0 ranks experts 2 > 0 > 3 > 1; token 1 ranks 1 > 3 > ...; token 2 ranks 2 > 3.
  const std::vector<float> logits = {1.0f, -2.0f, 3.0f, 0.5f,   //
                                     -1.0f, 4.0f, 0.0f, 2.0f,   //
                                     0.0f, 0.1f, 5.0f, 4.0f};
  ExpertRouting r;
  r.route(logits.data(), 3, 4, 2, /*normalize=*/false);
  ASSERT_EQ(r.offsets, (std::vector<int32_t>{0, 1, 2, 4, 6}));
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{0, 1, 0, 2, 1, 2}));
  // Without normalizing, each weight is the token's softmax probability of the expert.
  const auto p0 = softmax({1.0f, -2.0f, 3.0f, 0.5f});
  const auto p1 = softmax({-1.0f, 4.0f, 0.0f, 2.0f});
  const auto p2 = softmax({0.0f, 0.1f, 5.0f, 4.0f});
  const std::vector<double> want = {p0[0], p1[1], p0[2], p2[2], p1[3], p2[3]};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(r.weights[i], want[i], 1e-6) << i;
}

TEST(ExpertRoutingTest, NormalizedWeightsAreASoftmaxOverTheChosen) {
  const std::vector<float> logits = {1.0f, -2.0f, 3.0f, 0.5f};
  ExpertRouting r;
  r.route(logits.data(), 1, 4, 2, /*normalize=*/true);
  ASSERT_EQ(r.tokens.size(), 2u);
  // Experts 0 and 2: weights e^1 / (e^1 + e^3) and e^3 / (e^1 + e^3).
  const double z = std::exp(1.0) + std::exp(3.0);
  EXPECT_NEAR(r.weights[0], std::exp(1.0) / z, 1e-6);
  EXPECT_NEAR(r.weights[1], std::exp(3.0) / z, 1e-6);
  EXPECT_EQ(r.count(0), 1);
  EXPECT_EQ(r.count(1), 0);
  EXPECT_EQ(r.count(2), 1);
}

TEST(ExpertRoutingTest, TiesGoToTheLowerIndex) {
  const std::vector<float> logits = {2.0f, 2.0f, 2.0f, 1.0f};
  ExpertRouting r;
  r.route(logits.data(), 1, 4, 2, false);
  EXPECT_EQ(r.count(0), 1);
  EXPECT_EQ(r.count(1), 1);
  EXPECT_EQ(r.count(2), 0);
}

TEST(ExpertRoutingTest, AllExpertsUsedGivesEveryTokenEveryExpert) {
  const std::vector<float> logits = {0.3f, -0.2f, 0.1f, 0.0f, 0.0f, 0.0f};
  ExpertRouting r;
  r.route(logits.data(), 2, 3, 3, true);
  for (int e = 0; e < 3; ++e) EXPECT_EQ(r.count(e), 2);
  // Token 1's logits are equal: a third each.
  EXPECT_NEAR(r.weights[1], 1.0 / 3, 1e-6);
  EXPECT_NEAR(r.weights[3], 1.0 / 3, 1e-6);
}

}  // namespace
}  // namespace llms
