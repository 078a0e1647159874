#include "benchserve/arrival.h"

#include <gtest/gtest.h>

#include <cmath>

namespace llms::benchserve {
namespace {

struct GapStats {
  double mean = 0, cv = 0;
  size_t n = 0;
};

GapStats gap_stats(const std::vector<double>& t) {
  GapStats s;
  s.n = t.size() - 1;
  double sum = 0, sq = 0;
  for (size_t i = 1; i < t.size(); ++i) sum += t[i] - t[i - 1];
  s.mean = sum / static_cast<double>(s.n);
  for (size_t i = 1; i < t.size(); ++i) sq += (t[i] - t[i - 1] - s.mean) * (t[i] - t[i - 1] - s.mean);
  s.cv = std::sqrt(sq / static_cast<double>(s.n)) / s.mean;
  return s;
}

// Gaps of a gamma(k, theta) process: mean 1/rate, CV 1/sqrt(k). Bounds are five
// standard errors, from the gamma's moments: the sample mean's relative error is
// CV/sqrt(n); the sample standard deviation's is about sqrt((2 + 6/k)/n)/2 (its
// excess kurtosis is 6/k); the CV's relative error is at most their sum.
void expect_gamma_gaps(double rate, double k, uint64_t seed) {
  constexpr int kN = 40001;
  const GapStats s = gap_stats(arrival_offsets(kN, rate, k, seed));
  const double n = static_cast<double>(s.n);
  const double cv = 1.0 / std::sqrt(k);
  const double mean_rel = cv / std::sqrt(n);
  const double sd_rel = 0.5 * std::sqrt((2 + 6 / k) / n);
  EXPECT_NEAR(s.mean, 1.0 / rate, 5 * mean_rel / rate) << "k=" << k;
  EXPECT_NEAR(s.cv, cv, 5 * (mean_rel + sd_rel) * cv) << "k=" << k;
}

TEST(Arrival, PoissonAtBurstinessOneHasMeanOneOverRateAndCvOne) { expect_gamma_gaps(10.0, 1.0, 1); }

TEST(Arrival, BurstinessHalfHasCvSqrtTwo) { expect_gamma_gaps(10.0, 0.5, 2); }

TEST(Arrival, BurstinessFourIsMoreRegular) { expect_gamma_gaps(4.0, 4.0, 3); }

TEST(Arrival, StartsAtZeroAndNeverGoesBack) {
  const auto t = arrival_offsets(1000, 50, 0.3, 7);
  ASSERT_EQ(t.size(), 1000u);
  EXPECT_EQ(t[0], 0.0);
  for (size_t i = 1; i < t.size(); ++i) EXPECT_GE(t[i], t[i - 1]);
}

TEST(Arrival, SameSeedSameTimesOtherSeedOthers) {
  EXPECT_EQ(arrival_offsets(100, 5, 1, 42), arrival_offsets(100, 5, 1, 42));
  EXPECT_NE(arrival_offsets(100, 5, 1, 42), arrival_offsets(100, 5, 1, 43));
}

TEST(Arrival, InfiniteRateSendsEverythingAtOnce) {
  const auto t = arrival_offsets(64, INFINITY, 1, 0);
  ASSERT_EQ(t.size(), 64u);
  for (double x : t) EXPECT_EQ(x, 0.0);
}

}  // namespace
}  // namespace llms::benchserve
