#include "engine/stats_window.h"

#include <gtest/gtest.h>

namespace llms {
namespace {

StepSample step(int32_t tokens) {
  StepSample s;
  s.batch_tokens = tokens;
  return s;
}

TEST(StatsWindowTest, KeepsTheLastCapacitySamplesOldestFirst) {
  StatsWindow w(3);
  for (int32_t i = 1; i <= 5; ++i) w.record_step(step(i));
  const StatsWindowSnapshot s = w.snapshot();
  EXPECT_EQ(s.capacity, 3);
  EXPECT_EQ(s.steps_total, 5);
  ASSERT_EQ(s.steps.size(), 3u);
  EXPECT_EQ(s.steps[0].batch_tokens, 3);
  EXPECT_EQ(s.steps[1].batch_tokens, 4);
  EXPECT_EQ(s.steps[2].batch_tokens, 5);
}

TEST(StatsWindowTest, FewerSamplesThanCapacityAreAllKept) {
  StatsWindow w(8);
  w.record_step(step(7));
  w.record_step(step(9));
  const StatsWindowSnapshot s = w.snapshot();
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].batch_tokens, 7);
  EXPECT_EQ(s.steps[1].batch_tokens, 9);
  EXPECT_TRUE(s.requests.empty());
}

TEST(StatsWindowTest, TotalsCountEveryRequestBeyondTheWindow) {
  StatsWindow w(2);
  for (int i = 0; i < 5; ++i) {
    RequestSample r;
    r.prompt_tokens = 10;
    r.completion_tokens = i;
    r.reason = i % 2 == 0 ? FinishReason::kStop : FinishReason::kLength;
    w.record_request(r);
  }
  const StatsWindowSnapshot s = w.snapshot();
  EXPECT_EQ(s.requests.size(), 2u);
  EXPECT_EQ(s.requests.back().completion_tokens, 4);
  EXPECT_EQ(s.requests_total, 5);
  EXPECT_EQ(s.prompt_tokens_total, 50);
  EXPECT_EQ(s.completion_tokens_total, 0 + 1 + 2 + 3 + 4);
  EXPECT_EQ(s.finished_by_reason[static_cast<size_t>(FinishReason::kStop)], 3);
  EXPECT_EQ(s.finished_by_reason[static_cast<size_t>(FinishReason::kLength)], 2);
}

TEST(StatsWindowTest, ZeroCapacityKeepsOnlyTotals) {
  StatsWindow w(0);
  w.record_step(step(1));
  w.record_request(RequestSample{});
  const StatsWindowSnapshot s = w.snapshot();
  EXPECT_TRUE(s.steps.empty());
  EXPECT_TRUE(s.requests.empty());
  EXPECT_EQ(s.steps_total, 1);
  EXPECT_EQ(s.requests_total, 1);
}

}  // namespace
}  // namespace llms
