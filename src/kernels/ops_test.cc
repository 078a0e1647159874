#include "kernels/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/random.h"

namespace llms {
namespace {

TEST(OpsTest, RmsnormHandComputed) {
  // x = [3, 4]: mean square 12.5, 1/sqrt(12.5) = 0.28284271.
  const float x[2] = {3, 4}, w[2] = {1, 2};
  float out[2];
  rmsnorm(x, w, 2, 0.0f, out);
  EXPECT_NEAR(out[0], 3 * 0.28284271f, 1e-6);
  EXPECT_NEAR(out[1], 8 * 0.28284271f, 1e-6);
}

TEST(OpsTest, RopeRotatesPairsByPositionTimesFrequency) {
  // One head of 4 dims, rot_dim 4: pair (0,1) at freq 1, pair (2,3) at freq 0.01.
  const float inv_freq[2] = {1.0f, 0.01f};
  float x[4] = {1, 0, 0, 1};
  rope(x, 1, 4, 4, 2, inv_freq, RopeStyle::kNormal);
  EXPECT_NEAR(x[0], std::cos(2.0f), 1e-6);
  EXPECT_NEAR(x[1], std::sin(2.0f), 1e-6);
  EXPECT_NEAR(x[2], -std::sin(0.02f), 1e-6);
  EXPECT_NEAR(x[3], std::cos(0.02f), 1e-6);
  // NeoX pairs (0,2) and (1,3).
  float y[4] = {1, 0, 0, 1};
  rope(y, 1, 4, 4, 2, inv_freq, RopeStyle::kNeox);
  EXPECT_NEAR(y[0], std::cos(2.0f), 1e-6);
  EXPECT_NEAR(y[2], std::sin(2.0f), 1e-6);
  EXPECT_NEAR(y[1], -std::sin(0.02f), 1e-6);
  EXPECT_NEAR(y[3], std::cos(0.02f), 1e-6);
}

TEST(OpsTest, SoftmaxSumsToOneAndKeepsOrder) {
  std::vector<float> x = {1, 2, 3, 1000};
  softmax(x.data(), 4);
  EXPECT_NEAR(x[3], 1.0f, 1e-6);
  std::vector<float> y = {0, std::log(3.0f)};
  softmax(y.data(), 2);
  EXPECT_NEAR(y[0], 0.25f, 1e-6);
  EXPECT_NEAR(y[1], 0.75f, 1e-6);
}

TEST(OpsTest, SiluMulAndGeluHandValues) {
  const float g[2] = {0.0f, 1.0f}, u[2] = {5.0f, 2.0f};
  float out[2];
  silu_mul(g, u, 2, out);
  EXPECT_FLOAT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 2.0f / (1.0f + std::exp(-1.0f)), 1e-6);
  const float x[1] = {1.0f};
  float o[1];
  gelu(x, 1, o);
  EXPECT_NEAR(o[0], 0.8411920f, 1e-6);  // 0.5 * (1 + tanh(0.79788456 * 1.044715))
}

}  // namespace
}  // namespace llms
