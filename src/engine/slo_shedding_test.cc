// SLO shedding: the queue's service rate measured over backlogged intervals only, and
// which waiting requests are refused, against forecasts computed by hand.
#include "engine/slo_shedding.h"

#include <gtest/gtest.h>

#include <vector>

namespace llms {
namespace {

constexpr int64_t kMs = 1'000'000;

Sequence waiting(uint64_t id, int64_t arrival_ns, double ttft_ms, int64_t prompt = 8) {
  Sequence s;
  s.id = id;
  s.arrival_ns = arrival_ns;
  s.slo.ttft_ms = ttft_ms;
  s.prompt_len = prompt;
  return s;
}

TEST(SloShedderTest, NothingIsShedBeforeTheRateIsKnown) {
  SloShedder shedder;
  shedder.on_schedule(0, 0, true);
  for (int i = 1; i <= 3; ++i) shedder.on_schedule(i * 10 * kMs, 1, true);  // 3 admissions < kMinAdmissions
  EXPECT_EQ(shedder.service_rate(), 0);
  Sequence hopeless = waiting(1, 0, 0.001);
  std::vector<Sequence*> queue{&hopeless};
  EXPECT_TRUE(shedder.unattainable(queue, 1000 * kMs, 128).empty());
  EXPECT_EQ(shedder.retry_after_s(100), 1);
}

TEST(SloShedderTest, TheRateCountsOnlyIntervalsThatBeganWithABacklog) {
  SloShedder shedder;
  shedder.on_schedule(0, 0, true);
  shedder.on_schedule(10 * kMs, 2, true);    // counted: 10 ms, 2 admissions
  shedder.on_schedule(20 * kMs, 2, false);   // counted: 10 ms, 2; the queue is empty after it
  shedder.on_schedule(1000 * kMs, 5, true);  // not counted: it began without a backlog (idle, light load)
  shedder.on_schedule(1010 * kMs, 1, true);  // counted: 10 ms, 1
  // 5 admissions in 30 ms.
  EXPECT_NEAR(shedder.service_rate(), 5 / 0.030, 1e-9);
  EXPECT_NEAR(shedder.step_s(), 0.010, 1e-12);
  // 10 waiting at 166.7 per second drain in 0.06 s: the hint is at least a second.
  EXPECT_EQ(shedder.retry_after_s(10), 1);
  EXPECT_EQ(shedder.retry_after_s(400), 3);  // 2.4 s, rounded up
}

TEST(SloShedderTest, TheWindowForgetsTheOldestIntervals) {
  SloShedder shedder;
  shedder.on_schedule(0, 0, true);
  // kWindow intervals of 10 ms with 1 admission each, then kWindow with 2 each.
  int64_t t = 0;
  for (size_t i = 0; i < SloShedder::kWindow; ++i) shedder.on_schedule(t += 10 * kMs, 1, true);
  EXPECT_NEAR(shedder.service_rate(), 100, 1e-9);
  for (size_t i = 0; i < SloShedder::kWindow; ++i) shedder.on_schedule(t += 10 * kMs, 2, true);
  EXPECT_NEAR(shedder.service_rate(), 200, 1e-9);
}

TEST(SloShedderTest, BurstsOfAdmissionsALifetimeApartAreMeasuredAtTheirMeanRate) {
  // Sequences of one length finish together: 32 requests leave the queue every 100
  // steps of 10 ms, 32 per second on average. The window holds 2 or 3 bursts whatever
  // the phase (kWindow = 256 steps), so the rate stays within 25% of it; a window of 64
  // steps would read 0 or 50 per second.
  SloShedder shedder;
  shedder.on_schedule(0, 0, true);
  int64_t t = 0;
  for (int step = 1; step <= 2000; ++step) {
    shedder.on_schedule(t += 10 * kMs, step % 100 == 0 ? 32 : 0, true);
    if (step >= static_cast<int>(SloShedder::kWindow)) {
      EXPECT_GE(shedder.service_rate(), 32 * 0.75) << "step " << step;
      EXPECT_LE(shedder.service_rate(), 32 * 1.25) << "step " << step;
    }
  }
}

TEST(SloShedderTest, RequestsThatCannotMeetTheirTargetAreShedAndTheRestMoveUp) {
  SloShedder shedder;
  shedder.on_schedule(0, 0, true);
  for (int i = 1; i <= 4; ++i) shedder.on_schedule(i * 10 * kMs, 1, true);  // 100 per second, 10 ms steps
  ASSERT_NEAR(shedder.service_rate(), 100, 1e-9);
  const int64_t now = 1000 * kMs;
  // Forecast first token = now + (kept requests ahead) / 100 s + ceil(prompt / 128) steps of 10 ms.
  Sequence a = waiting(1, now, 0);        // no target: kept, counts as ahead (1)
  Sequence b = waiting(2, now, 50);       // 1/100 + 10 ms = 20 ms <= 50: kept (2 ahead)
  Sequence c = waiting(3, now - 500 * kMs, 10);  // already started (preempted back): never shed (3 ahead)
  c.first_scheduled_ns = now - 400 * kMs;
  Sequence d = waiting(4, now, 35);        // 30 ms + 10 ms = 40 ms > 35: shed
  Sequence e = waiting(5, now, 45);        // d left: 30 + 10 = 40 ms <= 45: kept (4 ahead)
  Sequence f = waiting(6, now, 65, 300);   // 40 ms + 3 steps = 70 ms > 65: shed
  Sequence g = waiting(7, now - 10 * kMs, 61);  // 40 + 10 = 50 ms from now, 60 from arrival <= 61: kept
  Sequence h = waiting(8, now - 10 * kMs, 69);  // g ahead too: 60 ms from now, 70 from arrival > 69: shed
  std::vector<Sequence*> queue{&a, &b, &c, &d, &e, &f, &g, &h};
  const auto shed = shedder.unattainable(queue, now, 128);
  ASSERT_EQ(shed.size(), 3u);
  EXPECT_EQ(shed[0].seq, &d);
  EXPECT_NEAR(shed[0].forecast_ttft_s, 0.040, 1e-9);
  EXPECT_EQ(shed[1].seq, &f);
  EXPECT_NEAR(shed[1].forecast_ttft_s, 0.070, 1e-9);
  EXPECT_EQ(shed[2].seq, &h);
  EXPECT_NEAR(shed[2].forecast_ttft_s, 0.070, 1e-9);
}

// The budget's room for prompts is what the decoding sequences leave of it: with 120
// of 128 tokens taken by decodes, a 32-token prompt takes ceil(32 / 8) = 4 steps.
TEST(SloShedderTest, PromptsGetTheBudgetTheDecodesLeave) {
  SloShedder shedder;
  shedder.on_schedule(0, 0, true);
  for (int i = 1; i <= 4; ++i) shedder.on_schedule(i * 10 * kMs, 1, true);  // 100 per second, 10 ms steps
  const int64_t now = 1000 * kMs;
  Sequence a = waiting(1, now, 45, 32);  // next in line: 0 ahead + 4 steps = 40 ms <= 45
  Sequence b = waiting(2, now, 45, 32);  // 10 ms + 40 ms = 50 ms > 45: shed
  std::vector<Sequence*> queue{&a, &b};
  EXPECT_TRUE(shedder.unattainable(queue, now, 128).empty());  // no decodes: 1 step each
  const auto shed = shedder.unattainable(queue, now, 128, 120);
  ASSERT_EQ(shed.size(), 1u);
  EXPECT_EQ(shed[0].seq, &b);
  EXPECT_NEAR(shed[0].forecast_ttft_s, 0.050, 1e-9);
  // More decodes than the budget: one prompt token per step, not a division by zero.
  const auto all = shedder.unattainable(queue, now, 128, 200);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_NEAR(all[0].forecast_ttft_s, 0.320, 1e-9);
}

}  // namespace
}  // namespace llms
