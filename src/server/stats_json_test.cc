#include "server/stats_json.h"

#include <gtest/gtest.h>

namespace llms {
namespace {

TEST(StatsJsonTest, PercentilesInterpolateBetweenRanks) {
  EXPECT_EQ(window_percentile({}, 50), 0);
  EXPECT_EQ(window_percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(window_percentile({4, 1, 3, 2}, 50), 2.5);  // unsorted input
  EXPECT_DOUBLE_EQ(window_percentile({1, 2, 3, 4, 5}, 90), 4.6);
  EXPECT_DOUBLE_EQ(window_percentile({1, 2, 3}, 100), 3);
}

TEST(StatsJsonTest, SummaryRatesDecodeTokensOverTheStepsSpan) {
  StatsWindowSnapshot w;
  for (int i = 0; i < 3; ++i) {
    StepSample s;
    s.unix_ms = 1000 + 500 * i;  // a one-second span
    s.batch_tokens = 10;
    s.prefill_tokens = i == 0 ? 6 : 0;  // 4 + 10 + 10 decode tokens
    w.steps.push_back(s);
  }
  RequestSample done;
  done.ttft_s = 0.5;
  done.reason = FinishReason::kLength;
  RequestSample refused;  // no token: left out of TTFT and ITL, counted by reason
  refused.e2e_s = 0.1;
  refused.reason = FinishReason::kTimeout;
  w.requests = {done, refused};
  const Json s = window_summary(w);
  EXPECT_DOUBLE_EQ(s["generation_tokens_per_s"].get<double>(), 24.0);
  EXPECT_EQ(s["ttft_s"]["count"], 1);
  EXPECT_DOUBLE_EQ(s["ttft_s"]["p50"].get<double>(), 0.5);
  EXPECT_EQ(s["itl_s"]["count"], 0);
  EXPECT_EQ(s["e2e_s"]["count"], 2);
  EXPECT_EQ(s["finish_reasons"]["length"], 1);
  EXPECT_EQ(s["finish_reasons"]["timeout"], 1);
}

TEST(StatsJsonTest, ColumnsHoldOneValuePerSampleInOrder) {
  std::vector<RequestSample> rs(2);
  rs[0].completion_tokens = 3;
  rs[1].completion_tokens = 9;
  rs[1].reason = FinishReason::kCancelled;
  const Json c = request_columns(rs);
  for (const auto& [key, column] : c.items()) EXPECT_EQ(column.size(), 2u) << key;
  EXPECT_EQ(c["completion_tokens"], Json::array({3, 9}));
  EXPECT_EQ(c["finish_reason"], Json::array({"stop", "cancelled"}));
  EXPECT_TRUE(step_columns({})["t_ms"].empty());
}

}  // namespace
}  // namespace llms
