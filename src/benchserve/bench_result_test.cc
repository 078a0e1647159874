#include "benchserve/bench_result.h"

#include <gtest/gtest.h>

namespace llms::benchserve {
namespace {

RequestOutcome done(double ttft_s, double e2e_s, int tokens) {
  RequestOutcome r;
  r.ok = true;
  r.got_text = tokens > 0;
  r.ttft_s = ttft_s;
  r.e2e_s = e2e_s;
  r.output_tokens = tokens;
  r.prompt_tokens = 7;
  return r;
}

RequestOutcome failed(const std::string& why) {
  RequestOutcome r;
  r.error = why;
  return r;
}

// a: TTFT 125 ms, TPOT (1000-125)/9 = 97.2 ms, E2E 1000 ms
// b: TTFT 600 ms, TPOT 100 ms, E2E 1000 ms
// c: TTFT 200 ms, TPOT (3000-200)/10 = 280 ms, E2E 3000 ms
// d: failed
// e: TTFT 300 ms, one token (TPOT 0), E2E 300 ms
std::vector<RequestOutcome> hand_example() {
  return {done(0.125, 1.0, 10), done(0.6, 1.0, 5), done(0.2, 3.0, 11), failed("HTTP 503: busy"), done(0.3, 0.3, 1)};
}

TEST(Goodput, CountsRequestsMeetingEverySloThatIsSet) {
  const auto r = hand_example();
  EXPECT_EQ(count_good(r, {}), 4);                   // no SLO: every completed request
  EXPECT_EQ(count_good(r, {500.0, {}, {}}), 3);      // a, c, e
  EXPECT_EQ(count_good(r, {{}, 200.0, {}}), 3);      // a, b, e
  EXPECT_EQ(count_good(r, {{}, {}, 2000.0}), 3);     // a, b, e
  EXPECT_EQ(count_good(r, {500.0, 200.0, 2000.0}), 2);  // a, e
  EXPECT_EQ(count_good(r, {125.0, {}, {}}), 1);      // a: exactly at the SLO counts
}

TEST(BenchResult, CountsThroughputsAndGoodputFromOutcomes) {
  RunOutput run;
  run.rate = 4;
  run.outcomes = hand_example();
  run.outcomes.push_back(failed("HTTP 503: busy"));
  run.outcomes.push_back(failed("timeout"));
  run.outcomes[0].server_prompt_ms = 4;  // as llama-server reports its prefill
  run.outcomes[1].server_prompt_ms = 6;
  run.duration_s = 2.0;
  run.peak_concurrency = 3;
  BenchOptions o;
  o.percentiles = {50, 90};
  o.goodput = {500.0, 200.0, {}};
  o.price_per_hour = 3.6;  // $0.001 per second
  const BenchResult r = compute_result(run, o);
  EXPECT_EQ(r.num_prompts, 7);
  EXPECT_EQ(r.completed, 4);
  EXPECT_EQ(r.failed, 3);
  EXPECT_EQ(r.total_output_tokens, 27);
  EXPECT_EQ(r.total_input_tokens, 28);
  EXPECT_DOUBLE_EQ(r.request_throughput, 2.0);
  EXPECT_DOUBLE_EQ(r.output_throughput, 13.5);
  ASSERT_TRUE(r.request_goodput.has_value());
  EXPECT_DOUBLE_EQ(*r.request_goodput, 1.0);  // a, e in 2 s
  EXPECT_EQ(r.peak_concurrency, 3);
  EXPECT_EQ(r.tpot_ms.count, 3u);  // e has one token
  EXPECT_NEAR(r.tpot_ms.median, 100, 1e-9);
  EXPECT_NEAR(r.ttft_ms.median, 250, 1e-9);  // 125, 200, 300, 600
  EXPECT_NE(r.ttft_ms.at(99), 0);            // p99 is always reported
  EXPECT_EQ(r.server_prompt_ms.count, 2u);
  EXPECT_DOUBLE_EQ(r.server_prompt_ms.median, 5);
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].first, "HTTP 503: busy");
  EXPECT_EQ(r.errors[0].second, 2);
  ASSERT_TRUE(r.cost_usd.has_value());
  EXPECT_NEAR(*r.cost_usd, 0.002, 1e-12);
  EXPECT_NEAR(*r.cost_per_million_output_tokens, 0.002 / 27 * 1e6, 1e-9);
  EXPECT_NEAR(*r.cost_per_thousand_requests, 0.5, 1e-12);
}

TEST(BenchResult, NoGoodputWithoutSloAndNoCostWithoutPrice) {
  RunOutput run;
  run.outcomes = hand_example();
  run.duration_s = 1;
  const BenchResult r = compute_result(run, BenchOptions{});
  EXPECT_FALSE(r.request_goodput.has_value());
  EXPECT_FALSE(r.cost_usd.has_value());
}

TEST(BenchResult, ReportedPercentilesAlwaysHoldP99Once) {
  EXPECT_EQ(reported_percentiles({90, 50}), (std::vector<double>{50, 90, 99}));
  EXPECT_EQ(reported_percentiles({99, 50}), (std::vector<double>{50, 99}));
}

}  // namespace
}  // namespace llms::benchserve
