#include "benchserve/metrics_delta.h"

#include <gtest/gtest.h>

#include <cmath>

namespace llms::benchserve {
namespace {

constexpr const char* kBefore = R"(# HELP llmserve_generation_tokens_total Tokens generated.
# TYPE llmserve_generation_tokens_total counter
llmserve_generation_tokens_total{version="a"} 100
llmserve_generation_tokens_total{version="b"} 20
llmserve_prompt_tokens_total{version="a"} 50
llmserve_prefix_cache_hits_total{version="a"} 0
llmserve_prefix_cache_queries_total{version="a"} 0
llmserve_preemptions_total{version="a"} 1
llmserve_requests_finished_total{version="a",reason="stop"} 3
llmserve_requests_finished_total{version="a",reason="length"} 2
llmserve_time_to_first_token_seconds_bucket{version="a",le="0.1"} 1
llmserve_time_to_first_token_seconds_bucket{version="a",le="0.2"} 1
llmserve_time_to_first_token_seconds_bucket{version="a",le="0.5"} 1
llmserve_time_to_first_token_seconds_bucket{version="a",le="+Inf"} 1
llmserve_time_to_first_token_seconds_sum{version="a"} 0.05
llmserve_time_to_first_token_seconds_count{version="a"} 1
)";

// Ten more requests: TTFT buckets 0.1: +2, 0.2: +4, 0.5: +4.
constexpr const char* kAfter = R"(llmserve_generation_tokens_total{version="a"} 400
llmserve_generation_tokens_total{version="b"} 20
llmserve_prompt_tokens_total{version="a"} 150
llmserve_prefix_cache_hits_total{version="a"} 30
llmserve_prefix_cache_queries_total{version="a"} 120
llmserve_preemptions_total{version="a"} 4
llmserve_requests_finished_total{version="a",reason="stop"} 8
llmserve_requests_finished_total{version="a",reason="length"} 7
llmserve_time_to_first_token_seconds_bucket{version="a",le="0.1"} 3
llmserve_time_to_first_token_seconds_bucket{version="a",le="0.2"} 7
llmserve_time_to_first_token_seconds_bucket{version="a",le="0.5"} 11
llmserve_time_to_first_token_seconds_bucket{version="a",le="+Inf"} 11
llmserve_time_to_first_token_seconds_sum{version="a"} 2.05
llmserve_time_to_first_token_seconds_count{version="a"} 11
)";

TEST(MetricsDelta, SumsSamplesOverLabelSets) {
  const auto s = parse_prometheus(kBefore);
  EXPECT_EQ(s.value("llmserve_generation_tokens_total"), 120);
  EXPECT_EQ(s.value("llmserve_requests_finished_total"), 5);
  EXPECT_EQ(s.value("absent_total"), 0);
  ASSERT_EQ(s.buckets.count("llmserve_time_to_first_token_seconds_bucket"), 1u);
  EXPECT_TRUE(std::isinf(s.buckets.at("llmserve_time_to_first_token_seconds_bucket").rbegin()->first));
}

TEST(MetricsDelta, HistogramQuantileInterpolatesInsideTheBucket) {
  // 10 samples: 2 in (0, 0.1], 4 in (0.1, 0.2], 4 in (0.2, 0.5]. The median's rank 5 is
  // the third of four in the second bucket: 0.1 + 0.1 * 3/4.
  const std::map<double, double> b = {{0.1, 2}, {0.2, 6}, {0.5, 10}, {INFINITY, 10}};
  EXPECT_NEAR(*histogram_quantile(b, 0.5), 0.175, 1e-12);
  EXPECT_NEAR(*histogram_quantile(b, 0.1), 0.05, 1e-12);
  EXPECT_NEAR(*histogram_quantile(b, 0.9), 0.2 + 0.3 * 3 / 4, 1e-12);
  // Samples past the last finite bound answer that bound.
  EXPECT_EQ(*histogram_quantile({{0.1, 1}, {INFINITY, 5}}, 0.9), 0.1);
  EXPECT_FALSE(histogram_quantile({{0.1, 0}, {INFINITY, 0}}, 0.5).has_value());
}

TEST(MetricsDelta, ClientSamplesCountedIntoTheServersBuckets) {
  const std::map<double, double> like = {{0.1, 0}, {0.2, 0}, {INFINITY, 0}};
  const auto c = cumulative_counts({0.05, 0.1, 0.15, 0.3}, like);
  EXPECT_EQ(c, (std::map<double, double>{{0.1, 2}, {0.2, 3}, {INFINITY, 4}}));
}

TEST(MetricsDelta, DeltaOfARun) {
  const ServerDelta d = server_delta(parse_prometheus(kBefore), parse_prometheus(kAfter));
  EXPECT_EQ(d.flavor, "llmserve");
  EXPECT_EQ(*d.generation_tokens, 300);
  EXPECT_EQ(*d.prompt_tokens, 100);
  EXPECT_EQ(*d.requests_finished, 10);
  EXPECT_EQ(*d.preemptions, 3);
  EXPECT_DOUBLE_EQ(*d.prefix_cache_hit_rate, 0.25);
  EXPECT_NEAR(*d.ttft_mean_s, 0.2, 1e-12);
  EXPECT_NEAR(*d.ttft_p50_s, 0.175, 1e-12);
  EXPECT_FALSE(d.queue_time_mean_s.has_value());  // no such histogram here
}

TEST(MetricsDelta, OtherServersNamesAndNone) {
  const ServerDelta v = server_delta(parse_prometheus("vllm:generation_tokens_total{model_name=\"m\"} 5\n"),
                                     parse_prometheus("vllm:generation_tokens_total{model_name=\"m\"} 12\n"));
  EXPECT_EQ(v.flavor, "vllm");
  EXPECT_EQ(*v.generation_tokens, 7);
  const ServerDelta l = server_delta({}, parse_prometheus("llamacpp:tokens_predicted_total 9\n"));
  EXPECT_EQ(l.flavor, "llama.cpp");
  EXPECT_EQ(*l.generation_tokens, 9);
  EXPECT_FALSE(l.preemptions.has_value());
  EXPECT_EQ(server_delta({}, parse_prometheus("other_total 1\n")).flavor, "");
}

}  // namespace
}  // namespace llms::benchserve
