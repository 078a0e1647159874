#include "deploy/canary_judge.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace llms {
namespace {

MeanStream normal_stream(double mean, double sd, int n, std::mt19937& rng) {
  std::normal_distribution<double> d(mean, sd);
  MeanStream s;
  for (int i = 0; i < n; ++i) s.add(d(rng));
  return s;
}

TEST(CanaryJudgeTest, MeanStreamMatchesTheTwoPassFormulas) {
  const double xs[] = {1, 4, 2, 8, 5};
  MeanStream s;
  for (double x : xs) s.add(x);
  EXPECT_DOUBLE_EQ(s.mean, 4.0);
  EXPECT_NEAR(s.variance(), (9 + 0 + 4 + 16 + 1) / 4.0, 1e-12);
  const MeanStream b = MeanStream::bernoulli(3, 10);
  MeanStream direct;
  for (int i = 0; i < 10; ++i) direct.add(i < 3 ? 1 : 0);
  EXPECT_DOUBLE_EQ(b.mean, direct.mean);
  EXPECT_NEAR(b.variance(), direct.variance(), 1e-12);
}

TEST(CanaryJudgeTest, SinceIsTheStreamOfTheLaterObservations) {
  const double xs[] = {3, -1, 4, 1, 5, 9, 2, 6};
  MeanStream all, earlier, later;
  for (int i = 0; i < 8; ++i) {
    all.add(xs[i]);
    (i < 3 ? earlier : later).add(xs[i]);
    if (i == 2) EXPECT_EQ(all.since(all).n, 0);
  }
  const MeanStream s = all.since(earlier);
  EXPECT_EQ(s.n, 5);
  EXPECT_NEAR(s.mean, later.mean, 1e-12);
  EXPECT_NEAR(s.variance(), later.variance(), 1e-12);
  EXPECT_NEAR(all.since(MeanStream{}).variance(), all.variance(), 1e-12);
  const MeanStream minus = later.negated();
  EXPECT_EQ(minus.n, later.n);
  EXPECT_DOUBLE_EQ(minus.mean, -later.mean);
  EXPECT_DOUBLE_EQ(minus.variance(), later.variance());
}

// Anytime validity, checked by simulation: watched after every observation up to 400,
// the sequence excludes the true mean in at most about alpha of the runs (a fixed-n
// interval looked at this often would exclude it in far more).
TEST(CanaryJudgeTest, ConfidenceSequenceHoldsUnderRepeatedLooks) {
  std::mt19937 rng(7);
  std::normal_distribution<double> d(1.0, 2.0);
  int missed = 0, fixed_missed = 0;
  const int runs = 300;
  for (int run = 0; run < runs; ++run) {
    MeanStream s;
    bool miss = false, fixed_miss = false;
    for (int t = 0; t < 400; ++t) {
      s.add(d(rng));
      if (s.n < 8) continue;
      const Interval i = confidence_sequence(s, 0.05);
      miss = miss || i.lo > 1.0 || i.hi < 1.0;
      const double half = 1.96 * std::sqrt(s.variance() / static_cast<double>(s.n));
      fixed_miss = fixed_miss || std::abs(s.mean - 1.0) > half;
    }
    missed += miss;
    fixed_missed += fixed_miss;
  }
  EXPECT_LE(missed, runs * 0.08);
  EXPECT_GT(fixed_missed, runs * 0.2);  // what the sequential correction is for
}

TEST(CanaryJudgeTest, WorseNoWorseAndUndecided) {
  std::mt19937 rng(3);
  const MeanStream stable = normal_stream(1.5, 0.3, 200, rng);
  // Garbage: 2 nats per token more, seen 10 times, is worse at once.
  CanarySignal bad{"quality", normal_stream(3.5, 0.5, 10, rng), stable, 0.3};
  CanaryVerdict v = judge_canary(std::span(&bad, 1), 0.05);
  EXPECT_EQ(v.verdict, Verdict::kWorse);
  EXPECT_EQ(v.reason, "quality");
  EXPECT_NE(v.figures.find("quality: worse"), std::string::npos) << v.figures;
  // As good: undecided after 10, no worse after enough.
  CanarySignal same{"quality", normal_stream(1.5, 0.3, 10, rng), stable, 0.3};
  EXPECT_EQ(judge_canary(std::span(&same, 1), 0.05).verdict, Verdict::kUndecided);
  same.candidate = normal_stream(1.5, 0.3, 200, rng);
  EXPECT_EQ(judge_canary(std::span(&same, 1), 0.05).verdict, Verdict::kNoWorse);
  // Below min_samples nothing is decided, however clear.
  bad.candidate = normal_stream(3.5, 0.5, 5, rng);
  EXPECT_EQ(judge_canary(std::span(&bad, 1), 0.05).verdict, Verdict::kUndecided);
}

TEST(CanaryJudgeTest, AGuardAbortsButIsNotNeededToPromote) {
  std::mt19937 rng(5);
  CanarySignal quality{"quality", normal_stream(1.5, 0.3, 300, rng), normal_stream(1.5, 0.3, 300, rng), 0.3};
  // A rare event at the same rate on both sides cannot be shown within 0.05 soon.
  CanarySignal abnormal{"abnormal", MeanStream::bernoulli(6, 300), MeanStream::bernoulli(6, 300), 0.05, true};
  std::vector<CanarySignal> signals{quality, abnormal};
  EXPECT_EQ(judge_canary(signals, 0.05).verdict, Verdict::kNoWorse);
  signals[1].candidate = MeanStream::bernoulli(300, 300);  // every output loops
  const CanaryVerdict v = judge_canary(signals, 0.05);
  EXPECT_EQ(v.verdict, Verdict::kWorse);
  EXPECT_EQ(v.reason, "abnormal");
  // Without the guard flag the same rare-event signal keeps the canary undecided.
  signals[1] = abnormal;
  signals[1].guard = false;
  signals[1].candidate = MeanStream::bernoulli(6, 300);
  EXPECT_EQ(judge_canary(signals, 0.05).verdict, Verdict::kUndecided);
}

}  // namespace
}  // namespace llms
