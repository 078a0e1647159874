#include "benchserve/stats.h"

#include <gtest/gtest.h>

#include <cmath>

namespace llms::benchserve {
namespace {

TEST(Stats, PercentilesInterpolateBetweenRanksLikeNumpy) {
  // 1..10: rank of p is p/100 * 9. p50 -> 4.5 -> 5.5; p90 -> 8.1 -> 9.1; p99 -> 8.91 -> 9.91.
  const Distribution d = summarize({7, 3, 10, 1, 5, 2, 9, 4, 8, 6}, {50, 90, 99, 100});
  EXPECT_EQ(d.count, 10u);
  EXPECT_DOUBLE_EQ(d.median, 5.5);
  EXPECT_NEAR(d.at(90), 9.1, 1e-12);
  EXPECT_NEAR(d.at(99), 9.91, 1e-12);
  EXPECT_DOUBLE_EQ(d.at(100), 10);
  EXPECT_DOUBLE_EQ(d.mean, 5.5);
  EXPECT_NEAR(d.std, std::sqrt(8.25), 1e-12);  // population: sum((x-5.5)^2)/10 = 82.5/10
}

TEST(Stats, OddCountMedianIsTheMiddleValue) {
  const Distribution d = summarize({30, 10, 20}, {25});
  EXPECT_DOUBLE_EQ(d.median, 20);
  EXPECT_DOUBLE_EQ(d.at(25), 15);  // rank 0.5 between 10 and 20
}

TEST(Stats, OneSampleIsEveryPercentile) {
  const Distribution d = summarize({4.25}, {1, 50, 99.9});
  EXPECT_DOUBLE_EQ(d.at(1), 4.25);
  EXPECT_DOUBLE_EQ(d.at(99.9), 4.25);
  EXPECT_DOUBLE_EQ(d.std, 0);
}

TEST(Stats, NoSamplesGiveZeros) {
  const Distribution d = summarize({}, {50, 99});
  EXPECT_EQ(d.count, 0u);
  EXPECT_EQ(d.mean, 0);
  EXPECT_EQ(d.at(99), 0);
}

TEST(Stats, AtIsZeroForAPercentileNotAskedFor) { EXPECT_EQ(summarize({1, 2}, {50}).at(90), 0); }

}  // namespace
}  // namespace llms::benchserve
