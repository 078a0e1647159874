#include "eval/load_benchmark.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

// Share of the requests whose output length is below `bound`.
double share_below(const std::vector<RequestParams>& rs, int bound) {
  int n = 0;
  for (const auto& r : rs) n += r.max_tokens < bound;
  return static_cast<double>(n) / static_cast<double>(rs.size());
}

// A two-layer model and six short requests, three at a time.
SyntheticSpec small_model() {
  SyntheticSpec m;
  m.n_vocab = 320, m.n_embd = 64, m.n_layer = 2, m.n_head = 4, m.n_head_kv = 2, m.n_ff = 128;
  return m;
}

LoadSpec small_load() {
  LoadSpec spec;
  spec.requests = 6, spec.concurrency = 3;
  spec.prompt_min = 4, spec.prompt_max = 8, spec.output_min = 3, spec.output_max = 6;
  return spec;
}

TEST(LoadBenchmarkTest, RequestsStayInTheirRangesAndRepeatForASeed) {
  LoadSpec spec;
  spec.requests = 500;
  spec.prompt_min = 5, spec.prompt_max = 9, spec.output_min = 16, spec.output_max = 1024;
  for (bool log_uniform : {false, true}) {
    spec.output_log_uniform = log_uniform;
    const auto rs = make_load_requests(spec, 100);
    ASSERT_EQ(rs.size(), 500u);
    for (const auto& r : rs) {
      ASSERT_GE(r.prompt.size(), 5u);
      ASSERT_LE(r.prompt.size(), 9u);
      EXPECT_EQ(r.prompt[0], 1);
      for (size_t i = 1; i < r.prompt.size(); ++i) ASSERT_TRUE(r.prompt[i] >= 3 && r.prompt[i] < 100);
      ASSERT_GE(r.max_tokens, 16);
      ASSERT_LE(r.max_tokens, 1024);
      EXPECT_TRUE(r.ignore_eos);
      EXPECT_EQ(r.sampling.temperature, 0.0f);
    }
    const auto again = make_load_requests(spec, 100);
    for (size_t i = 0; i < rs.size(); ++i) ASSERT_EQ(rs[i].max_tokens, again[i].max_tokens);
  }
}

// Uniform: the share below b is (b - min) / (max - min + 1); log-uniform: it is
// ln(b / min) / ln((max + 1) / min), so 16-128 holds half of 16-1024 (8x of 64x).
TEST(LoadBenchmarkTest, OutputLengthsFollowTheChosenDistribution) {
  LoadSpec spec;
  spec.requests = 4000;
  spec.output_min = 16, spec.output_max = 1023;
  spec.output_log_uniform = false;
  EXPECT_NEAR(share_below(make_load_requests(spec, 100), 128), 112.0 / 1008.0, 0.02);
  spec.output_log_uniform = true;
  const auto rs = make_load_requests(spec, 100);
  EXPECT_NEAR(share_below(rs, 128), std::log(128.0 / 16) / std::log(1024.0 / 16), 0.03);
  EXPECT_NEAR(share_below(rs, 32), std::log(32.0 / 16) / std::log(1024.0 / 16), 0.03);
}

// Poisson arrivals: increasing, their gaps of mean 1 / rate (4000 gaps: the sample
// mean's standard deviation is 1.6% of it, the bound is 5%) and exponential (a share
// 1 - e^-1 of the gaps is below the mean); the same for a seed; all at 0 in closed loop.
TEST(LoadBenchmarkTest, ArrivalsArePoissonAtTheRequestedRate) {
  LoadSpec spec;
  spec.requests = 4000;
  spec.request_rate = 20;
  const auto at = make_arrival_times(spec);
  ASSERT_EQ(at.size(), 4000u);
  int below_mean = 0;
  for (size_t i = 1; i < at.size(); ++i) {
    ASSERT_GT(at[i], at[i - 1]);
    below_mean += at[i] - at[i - 1] < 1.0 / 20;
  }
  EXPECT_NEAR(at.back() / 4000, 1.0 / 20, 0.05 / 20);
  EXPECT_NEAR(below_mean / 3999.0, 1 - std::exp(-1.0), 0.03);
  EXPECT_EQ(make_arrival_times(spec), at);
  spec.request_rate = 0;
  for (double a : make_arrival_times(spec)) ASSERT_EQ(a, 0.0);
}

// The timed round counts its own requests only: its tokens, and in the step profile
// the tokens its steps computed (each prompt, then every generated token but the last
// fed back), none of the warm-up's.
TEST(LoadBenchmarkTest, WarmupRoundsAreLeftOutOfTheResult) {
  const SyntheticSpec model_spec = small_model();
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_load.gguf";
  ASSERT_TRUE(write_synthetic_model(model_spec, path).ok());
  auto model = Model::load(path).value();
  auto tokenizer = Tokenizer::from_gguf(model->file()).value();
  LoadSpec spec = small_load();
  int64_t prompt = 0, generated = 0;
  for (const RequestParams& p : make_load_requests(spec, model_spec.n_vocab)) {
    prompt += static_cast<int64_t>(p.prompt.size());
    generated += p.max_tokens;
  }
  EngineConfig config;
  config.threads = 1;
  config.profile = true;
  for (int warmup : {0, 2}) {
    spec.warmup = warmup;
    auto r = run_load(*model, *tokenizer, config, spec);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->completed, 6);
    EXPECT_EQ(r->generated_tokens, generated);
    EXPECT_EQ(r->profiled_tokens, prompt + generated - spec.requests) << "warm-up rounds: " << warmup;
  }
  // Open loop: every request completes; with bounds nothing can miss, goodput is the
  // throughput, and with bounds nothing can meet, it is 0.
  spec.warmup = 0;
  spec.request_rate = 200;
  spec.goodput_ttft_s = 3600, spec.goodput_tpot_s = 3600;
  auto open = run_load(*model, *tokenizer, config, spec);
  ASSERT_TRUE(open.ok()) << open.status().to_string();
  EXPECT_EQ(open->completed, 6);
  EXPECT_EQ(open->failed, 0);
  EXPECT_EQ(open->generated_tokens, generated);
  EXPECT_DOUBLE_EQ(open->goodput_tok_s, open->tokens_per_s);
  EXPECT_DOUBLE_EQ(open->request_goodput, 6 / open->seconds);
  spec.goodput_ttft_s = 1e-9;
  open = run_load(*model, *tokenizer, config, spec);
  ASSERT_TRUE(open.ok()) << open.status().to_string();
  EXPECT_EQ(open->completed, 6);
  EXPECT_EQ(open->goodput_tok_s, 0);
  spec.warmup = -1;
  EXPECT_EQ(run_load(*model, *tokenizer, config, spec).status().code(), StatusCode::kInvalidArgument);
  spec.warmup = 0;
  spec.request_rate = -1;
  EXPECT_EQ(run_load(*model, *tokenizer, config, spec).status().code(), StatusCode::kInvalidArgument);
  std::filesystem::remove(path);
}

// The engine's own judgement of its SLO reaches the result: every request had targets;
// with targets nothing can miss, the SLO goodput is the throughput, and with a TTFT
// target nothing can meet (and no shedding), it is 0 while every request completes.
TEST(LoadBenchmarkTest, SloGoodputIsTheEnginesJudgementOfItsTargets) {
  const SyntheticSpec model_spec = small_model();
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_slo_load.gguf";
  ASSERT_TRUE(write_synthetic_model(model_spec, path).ok());
  auto model = Model::load(path).value();
  auto tokenizer = Tokenizer::from_gguf(model->file()).value();
  LoadSpec spec = small_load();
  spec.request_rate = 200;
  EngineConfig config;
  config.threads = 1;
  auto none = run_load(*model, *tokenizer, config, spec);
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_EQ(none->slo_requests, 0);
  config.slo.interactive.ttft_ms = 3.6e6, config.slo.interactive.itl_ms = 3.6e6;
  auto loose = run_load(*model, *tokenizer, config, spec);
  ASSERT_TRUE(loose.ok()) << loose.status().to_string();
  EXPECT_EQ(loose->slo_requests, 6);
  EXPECT_DOUBLE_EQ(loose->slo_goodput_tok_s, loose->tokens_per_s);
  config.slo.interactive.ttft_ms = 1e-6;
  auto tight = run_load(*model, *tokenizer, config, spec);
  ASSERT_TRUE(tight.ok()) << tight.status().to_string();
  EXPECT_EQ(tight->completed, 6);
  EXPECT_EQ(tight->slo_requests, 6);
  EXPECT_EQ(tight->slo_goodput_tok_s, 0);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace llms
