#include "base/random.h"

#include <gtest/gtest.h>

#include <cmath>

namespace llms {
namespace {

TEST(RngTest, SameSeedSameSequence) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    differs |= (x != c.next_u64());
  }
  EXPECT_TRUE(differs);
}

TEST(RngTest, UniformAndNormalMoments) {
  Rng r(7);
  double sum = 0, sum_sq = 0, nsum = 0, nsum_sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sum_sq += u * u;
    const double z = r.normal();
    nsum += z;
    nsum_sq += z * z;
  }
  // Mean 1/2 and variance 1/12 for U(0,1); 0 and 1 for N(0,1). 5-sigma bounds.
  EXPECT_NEAR(sum / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(sum_sq / n - (sum / n) * (sum / n), 1.0 / 12, 0.002);
  EXPECT_NEAR(nsum / n, 0.0, 5 / std::sqrt(n));
  EXPECT_NEAR(nsum_sq / n, 1.0, 0.02);
}

}  // namespace
}  // namespace llms
