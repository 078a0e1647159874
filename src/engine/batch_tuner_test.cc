// The batch tuner on a simulated dynamic batcher: Poisson arrivals at a known rate,
// batches whose time follows a known cost model S(B) = alpha + beta * B (with noise),
// run one at a time as the `dynamic` policy runs them. Expected sizes are computed by
// hand from the keep-up rule rate * S(B) <= 0.8 * B.
#include "engine/batch_tuner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>

namespace llms {
namespace {

constexpr double kAlpha = 0.2, kBeta = 0.01;  // a batch: 200 ms + 10 ms per request

struct Sim {
  explicit Sim(DynamicBatchTuner t) : tuner(t) {}
  DynamicBatchTuner tuner;
  std::mt19937 rng{7};
  double rate = 1;       // arrivals per second
  double now = 0;        // seconds
  double next_arrival = 0;
  std::deque<double> queue;  // arrival times of waiting requests
  std::vector<int> sizes;    // the decided size after each batch
  int changes = 0;
  bool tell_queue = true;    // pass the queue's length to the tuner

  int64_t ns(double t) const { return static_cast<int64_t>(t * 1e9); }
  void arrive_until(double t) {
    while (next_arrival <= t) {
      queue.push_back(next_arrival);
      tuner.arrival(ns(next_arrival));
      next_arrival += std::exponential_distribution<double>(rate)(rng);
    }
  }
  // One batch as the dynamic scheduler forms it: when the queue is empty, wait for the
  // next arrival; then wait until the queue holds the batch size or the oldest has
  // waited the delay; run up to the batch size requests to completion.
  void batch() {
    if (queue.empty()) {
      now = std::max(now, next_arrival);
      arrive_until(now);
    }
    const int size = tuner.decision().max_batch_size;
    const double ready_by = queue.front() + tuner.decision().max_delay_ms * 1e-3;
    while (static_cast<int>(queue.size()) < size && next_arrival <= ready_by) arrive_until(next_arrival);
    if (static_cast<int>(queue.size()) < size) now = std::max(now, ready_by);
    const int n = std::min<int>(size, static_cast<int>(queue.size()));
    queue.erase(queue.begin(), queue.begin() + n);
    const double jitter = 1.0 + std::uniform_real_distribution<double>(-0.05, 0.05)(rng);
    const double took = (kAlpha + kBeta * n) * jitter;
    now += took;
    arrive_until(now);
    if (tuner.batch_done(n, took, ns(now), tell_queue ? static_cast<int>(queue.size()) : 0)) {
      changes += tuner.decision().changed;
      sizes.push_back(tuner.decision().max_batch_size);
    }
  }
  void run(int batches) {
    for (int i = 0; i < batches; ++i) batch();
  }
};

// The smallest size that keeps up at `rate`, by the rule, from the true model.
int keep_up_size(double rate, int cap) {
  for (int b = 1; b <= cap; ++b) {
    if (rate * (kAlpha + kBeta * b) <= 0.8 * b) return b;
  }
  return cap;
}

TEST(BatchTunerTest, KeepUpSizesOfTheModelByHand) {
  // rate * (0.2 + 0.01 B) <= 0.8 B: B >= 0.2 rate / (0.8 - 0.01 rate).
  EXPECT_EQ(keep_up_size(1, 16), 1);    // 0.21 <= 0.8
  EXPECT_EQ(keep_up_size(12, 16), 4);   // B >= 2.4 / 0.68 = 3.53
  EXPECT_EQ(keep_up_size(60, 16), 16);  // B >= 12 / 0.2 = 60: none keeps up
}

TEST(BatchTunerTest, LightLoadRunsEachRequestAtOnce) {
  Sim sim{DynamicBatchTuner({16, 50, 0})};
  sim.rate = 1;
  sim.run(300);
  EXPECT_EQ(sim.tuner.decision().max_batch_size, 1);
  EXPECT_EQ(sim.tuner.decision().max_delay_ms, 0);
  EXPECT_NEAR(sim.tuner.decision().arrival_rate, 1.0, 0.2);
}

TEST(BatchTunerTest, ModerateLoadTakesTheSmallestSizeThatKeepsUpAndWaitsForItToFill) {
  Sim sim{DynamicBatchTuner({16, 500, 0})};
  sim.rate = 12;
  sim.run(600);
  const auto& d = sim.tuner.decision();
  EXPECT_EQ(d.max_batch_size, keep_up_size(12, 16));  // 4
  // (4 - 1) / 12 s, under the 500 ms bound, at a rate measured within the 20% the
  // tuner tolerates before it recomputes.
  EXPECT_NEAR(d.max_delay_ms, 250, 0.2 * 250);
  // The fit recovers the model from the sizes the batches had.
  EXPECT_NEAR(sim.tuner.fixed_s(), kAlpha, 0.03);
  EXPECT_NEAR(sim.tuner.per_request_s(), kBeta, 0.008);
  // A TTFT target bounds the wait to half of it.
  Sim bounded{DynamicBatchTuner({16, 500, /*ttft_target_s=*/0.2})};
  bounded.rate = 12;
  bounded.run(600);
  EXPECT_EQ(bounded.tuner.decision().max_delay_ms, 100);
}

TEST(BatchTunerTest, OverloadTakesTheLargestBatchAndTheConfiguredDelay) {
  Sim sim{DynamicBatchTuner({16, 50, 0})};
  sim.rate = 60;
  sim.run(300);
  EXPECT_EQ(sim.tuner.decision().max_batch_size, 16);
  EXPECT_EQ(sim.tuner.decision().max_delay_ms, 50);
}

TEST(BatchTunerTest, FollowsALoadStepWithoutOscillating) {
  Sim sim{DynamicBatchTuner({16, 500, 0})};
  sim.rate = 1;
  sim.run(200);
  ASSERT_EQ(sim.tuner.decision().max_batch_size, 1);
  const int changes_before = sim.changes;
  const size_t from = sim.sizes.size();
  sim.rate = 12;  // a twelve-fold load step
  sim.run(600);
  EXPECT_EQ(sim.tuner.decision().max_batch_size, keep_up_size(12, 16));
  // After the step the size only goes up (no reversal), in a few changes, then holds.
  for (size_t i = from + 1; i < sim.sizes.size(); ++i) EXPECT_GE(sim.sizes[i], sim.sizes[i - 1]) << "batch " << i;
  EXPECT_LE(sim.changes - changes_before, 6);
  const std::vector<int> tail(sim.sizes.end() - 200, sim.sizes.end());
  EXPECT_TRUE(std::all_of(tail.begin(), tail.end(), [&](int s) { return s == tail.front(); }));
}

// A step into overload (1 to 60 req/s: the queue grows past any batch) reaches the
// largest size in fewer batches, through fewer sizes, when the tuner sees the queue
// than by doublings alone, and still never goes down on the way. (Most of the delay
// is the rate window's: 256 arrivals before the measured rate shows the step.)
TEST(BatchTunerTest, AQueueThatFillsTheTargetSkipsTheDoublings) {
  auto batches_to_top = [](bool tell_queue, std::vector<int>* path) {
    Sim sim{DynamicBatchTuner({16, 50, 0})};
    sim.tell_queue = tell_queue;
    sim.rate = 1;
    sim.run(200);
    EXPECT_EQ(sim.tuner.decision().max_batch_size, 1);
    const size_t from = sim.sizes.size();
    sim.rate = 60;
    for (int i = 1; i <= 400; ++i) {
      sim.batch();
      if (sim.tuner.decision().max_batch_size == 16) {
        path->assign(sim.sizes.begin() + static_cast<std::ptrdiff_t>(from), sim.sizes.end());
        return i;
      }
    }
    return 1000;
  };
  std::vector<int> with_queue, without;
  const int fast = batches_to_top(true, &with_queue), slow = batches_to_top(false, &without);
  EXPECT_LT(fast, slow);
  // Fewer sizes on the way: without the queue the size goes through a doubling of
  // every target it recomputes on the way (in this run 2, 3, 6, 12), with it straight
  // from the first target the queue fills.
  auto between = [](const std::vector<int>& path) {
    std::vector<int> sizes;
    for (int v : path) {
      if (v > 1 && v < 16 && std::find(sizes.begin(), sizes.end(), v) == sizes.end()) sizes.push_back(v);
    }
    return sizes.size();
  };
  EXPECT_LT(between(with_queue), between(without));
  for (size_t i = 1; i < with_queue.size(); ++i) EXPECT_GE(with_queue[i], with_queue[i - 1]) << "batch " << i;
}

TEST(BatchTunerTest, ArrivalRateFallsWhenArrivalsStop) {
  DynamicBatchTuner tuner({8, 20, 0});
  EXPECT_EQ(tuner.arrival_rate(0), 0);
  for (int i = 0; i < 11; ++i) tuner.arrival(static_cast<int64_t>(i) * 100'000'000);  // every 100 ms for 1 s
  EXPECT_DOUBLE_EQ(tuner.arrival_rate(1'000'000'000), 10.0);  // 10 intervals in 1 s
  EXPECT_DOUBLE_EQ(tuner.arrival_rate(4'000'000'000), 11.0 / 4.0);  // 11 arrivals in the 4 s up to now
}

TEST(BatchTunerTest, HoldsTheConfiguredValuesUntilEnoughBatchesFinished) {
  DynamicBatchTuner tuner({8, 20, 0});
  for (size_t i = 0; i + 1 < DynamicBatchTuner::kMinBatches; ++i) {
    EXPECT_FALSE(tuner.batch_done(1, 0.1, static_cast<int64_t>(i) * 1'000'000'000));
  }
  EXPECT_EQ(tuner.decision().max_batch_size, 8);
  EXPECT_EQ(tuner.decision().max_delay_ms, 20);
  EXPECT_FALSE(tuner.batch_done(0, 0.1, 0)) << "an empty batch is not a measurement";
}

}  // namespace
}  // namespace llms
