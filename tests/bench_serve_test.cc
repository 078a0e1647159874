// `llmserve bench serve`'s client end to end against an in-process server on
// stories260K: the counts it reports agree with what the server counted, and the saved
// JSON has vLLM's keys with the right types.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "benchserve/bench_serve.h"
#include "server_test_util.h"

namespace llms::test {
namespace {

using benchserve::BenchOptions;

class BenchServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (have_stories()) server_ = start_server(stories_path()).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  }
  BenchOptions options() const {
    BenchOptions o;
    o.base_url = "http://127.0.0.1:" + std::to_string(server_->port());
    o.num_prompts = 12;
    o.request_rate = 50;
    o.max_concurrency = 4;
    o.input_len = 16;
    o.output_len = 8;
    o.ignore_eos = true;
    o.seed = 5;
    o.percentiles = {50, 90};
    o.timeout_s = 60;
    return o;
  }
  static std::string temp(const std::string& name) {
    return ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
  }
  static Json read_json(const std::string& path) {
    std::ifstream in(path);
    return Json::parse(in, nullptr, false);
  }
  static LlmServer* server_;
};

LlmServer* BenchServeTest::server_ = nullptr;

void expect_vllm_keys(const Json& j, int num_prompts) {
  for (const char* k : {"completed", "failed", "total_output_tokens", "peak_concurrency"}) {
    EXPECT_TRUE(j.contains(k) && j[k].is_number_integer()) << k;
  }
  for (const char* k : {"duration", "request_throughput", "output_throughput", "total_token_throughput"}) {
    EXPECT_TRUE(j.contains(k) && j[k].is_number()) << k;
  }
  for (const std::string m : {"ttft", "tpot", "itl", "e2el"}) {
    for (const std::string stat : {"mean_", "median_", "std_", "p50_", "p90_", "p99_"}) {
      const std::string k = stat + m + "_ms";
      EXPECT_TRUE(j.contains(k) && j[k].is_number()) << k;
    }
  }
  ASSERT_TRUE(j.contains("request_goodput"));
  for (const char* k : {"input_lens", "output_lens", "ttfts"}) {
    ASSERT_TRUE(j.contains(k) && j[k].is_array()) << k;
    EXPECT_EQ(j[k].size(), static_cast<size_t>(num_prompts)) << k;
  }
  EXPECT_TRUE(j["errors"].is_array());
  EXPECT_EQ(j["model_id"], "stories260K");
}

TEST_F(BenchServeTest, CountsAgreeWithTheServersMetricsAndTheResultHasVllmKeys) {
  BenchOptions o = options();
  o.warmup = 2;
  o.save_result = temp("bench.json");
  const double generated_before = metric(*server_, "llmserve_generation_tokens_total");
  auto r = benchserve::bench_serve(o, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r.value().runs.size(), 1u);
  const auto& run = r.value().runs[0];
  EXPECT_EQ(run.completed, 12);
  EXPECT_EQ(run.failed, 0);
  EXPECT_EQ(run.total_output_tokens, 12 * 8);  // ignore_eos
  EXPECT_GE(run.peak_concurrency, 1);
  EXPECT_LE(run.peak_concurrency, 4);
  EXPECT_EQ(run.tpot_ms.count, 12u);
  EXPECT_EQ(run.itl_ms.count, 12u * 7);
  // What the server counted in the measured run (warm-up excluded) ...
  EXPECT_EQ(run.server.flavor, "llmserve");
  ASSERT_TRUE(run.server.generation_tokens && run.server.prompt_tokens && run.server.requests_finished);
  EXPECT_EQ(*run.server.generation_tokens, run.total_output_tokens);
  EXPECT_EQ(*run.server.prompt_tokens, run.total_input_tokens);
  EXPECT_EQ(*run.server.requests_finished, 12);
  ASSERT_TRUE(run.server.ttft_mean_s.has_value());
  // ... and the warm-up on top of it, read in process.
  EXPECT_EQ(metric(*server_, "llmserve_generation_tokens_total") - generated_before, (12 + 2) * 8);

  const Json j = read_json(o.save_result);
  ASSERT_TRUE(j.is_object());
  expect_vllm_keys(j, 12);
  EXPECT_EQ(j["completed"], 12);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_TRUE(j["request_goodput"].is_null());  // no --goodput
  EXPECT_EQ(j["request_rate"], 50.0);
  EXPECT_EQ(j["server_metrics"]["generation_tokens"], 96.0);
  std::ifstream md(benchserve::sibling_path(o.save_result, ".md"));
  const std::string summary((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(summary.find("| rate (req/s) | completed |"), std::string::npos);
  EXPECT_NE(summary.find("| 50 | 12 | 0 |"), std::string::npos);
}

TEST_F(BenchServeTest, ChatSweepWritesEveryRateGoodputAndTheChart) {
  BenchOptions o = options();
  o.endpoint = "/v1/chat/completions";
  o.seed = 6;  // not the prompts of the other tests, which the result cache holds
  o.num_prompts = 6;
  o.sweep_rates = {20, benchserve::kInfiniteRate};
  o.goodput.e2el_ms = 60000;  // every request meets it
  o.price_per_hour = 1.0;
  o.save_result = temp("sweep.json");
  const double cache_hits_before = metric(*server_, "llmserve_result_cache_hits_total");
  auto r = benchserve::bench_serve(o, nullptr);
  // Every rate has its own prompts: none is answered by the result cache.
  EXPECT_EQ(metric(*server_, "llmserve_result_cache_hits_total"), cache_hits_before);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r.value().runs.size(), 2u);
  for (const auto& run : r.value().runs) {
    EXPECT_EQ(run.completed, 6);
    EXPECT_EQ(run.good_requests, 6);
    EXPECT_EQ(run.total_output_tokens, 6 * 8);
    EXPECT_TRUE(run.cost_per_million_output_tokens.has_value());
  }
  const Json j = read_json(o.save_result);
  ASSERT_TRUE(j["runs"].is_array());
  ASSERT_EQ(j["runs"].size(), 2u);
  expect_vllm_keys(j["runs"][0], 6);
  EXPECT_EQ(j["runs"][1]["request_rate"], "inf");
  EXPECT_TRUE(j["runs"][1]["request_goodput"].is_number());
  EXPECT_TRUE(j["runs"][1]["cost"]["per_thousand_requests"].is_number());
  const std::string svg_path = benchserve::sibling_path(o.save_result, ".svg");
  std::ifstream svg(svg_path);
  const std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("data-series=\"goodput\""), std::string::npos);
  EXPECT_NE(text.find("</svg>"), std::string::npos);
}

TEST_F(BenchServeTest, AnUnreachableServerIsAClearError) {
  BenchOptions o = options();
  o.base_url = "http://127.0.0.1:1";
  auto r = benchserve::bench_serve(o, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot reach http://127.0.0.1:1/v1/models"), std::string::npos)
      << r.status().message();
}

TEST_F(BenchServeTest, FailedRequestsAreReportedWithTheirErrors) {
  BenchOptions o = options();
  o.model = "no-such-model";  // the server refuses each request
  o.num_prompts = 3;
  o.save_result = temp("failed.json");
  auto r = benchserve::bench_serve(o, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("HTTP 404"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("no-such-model"), std::string::npos) << r.status().message();
  const Json j = read_json(o.save_result);  // saved all the same
  EXPECT_EQ(j["completed"], 0);
  EXPECT_EQ(j["failed"], 3);
  ASSERT_EQ(j["errors"].size(), 1u);
  EXPECT_EQ(j["errors"][0]["count"], 3);
}

}  // namespace
}  // namespace llms::test
