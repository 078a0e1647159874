#include "quant/error_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/random.h"

namespace llms {
namespace {

TEST(ErrorStatsTest, HandComputedErrors) {
  // x = [3, 4], q = [3, 3]: ||x|| = 5, ||x - q|| = 1.
  const float x[2] = {3, 4}, q[2] = {3, 3};
  QuantErrorStats s;
  s.add(x, q, 2);
  EXPECT_DOUBLE_EQ(s.relative_rms(), 0.2);
  EXPECT_DOUBLE_EQ(s.max_abs_err, 1.0);
  EXPECT_NEAR(s.snr_db(), 10 * std::log10(25.0), 1e-12);
  QuantErrorStats exact;
  exact.add(x, x, 2);
  EXPECT_EQ(exact.snr_db(), 200.0);
}

TEST(ErrorStatsTest, KurtosisOfKnownDistributions) {
  Rng rng(3);
  std::vector<float> normal(200000), uniform(200000);
  for (auto& v : normal) v = static_cast<float>(rng.normal());
  for (auto& v : uniform) v = static_cast<float>(rng.uniform());
  QuantErrorStats n, u;
  // Merging halves gives what one pass gives.
  n.add(normal.data(), normal.data(), 100000);
  QuantErrorStats n2;
  n2.add(normal.data() + 100000, normal.data() + 100000, 100000);
  n.merge(n2);
  u.add(uniform.data(), uniform.data(), 200000);
  EXPECT_NEAR(n.excess_kurtosis(), 0.0, 0.05);  // normal: 0
  EXPECT_NEAR(u.excess_kurtosis(), -1.2, 0.02);  // uniform: -6/5
}

TEST(ErrorStatsTest, OutlierShare) {
  std::vector<float> x(1000, 0.0f);
  x[0] = 100.0f;
  x[1] = -100.0f;
  OutlierCounter c;
  c.mean = 0;
  c.stddev = 1.0;
  c.add(x.data(), 1000);
  EXPECT_DOUBLE_EQ(c.share(), 0.002);
}

}  // namespace
}  // namespace llms
