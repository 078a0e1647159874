#include "eval/decode_benchmark.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "tools/synthetic.h"

namespace llms {
namespace {

// Speed is not asserted (benchmarks measure it); what is checked is the accounting.
TEST(DecodeBenchmarkTest, CountsTheBytesEveryTokenReads) {
  SyntheticSpec spec;
  spec.n_vocab = 320, spec.n_embd = 64, spec.n_layer = 2, spec.n_head = 4, spec.n_head_kv = 2, spec.n_ff = 128;
  spec.weight_type = DType::kQ8_0;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_bench.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto model = Model::load(path).value();
  DecodeBenchOptions o;
  o.prefill_tokens = 16;
  o.decode_tokens = 4;
  o.threads = 1;
  o.probe_bytes = 1 << 22;
  auto r = run_decode_benchmark(*model, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->type, "q8_0");
  // Per token: every matrix once plus one embedding row, in Q8_0 (34 bytes per 32).
  const int64_t d = 64, kv = 32, ff = 128;
  const int64_t per_layer = d * d * 2 + d * kv * 2 + d * ff * 3;
  const int64_t elems = 2 * per_layer + 320 * d + d;
  EXPECT_EQ(r->bytes_per_token, elems / 32 * 34);
  EXPECT_EQ(r->model_bytes, static_cast<int64_t>(std::filesystem::file_size(path)));
  EXPECT_GT(r->decode_tok_s, 0);
  EXPECT_NEAR(r->achieved_gb_s, r->bytes_per_token * r->decode_tok_s / 1e9, 1e-9);
  ASSERT_GT(r->bandwidth_gb_s, 0);
  EXPECT_GT(r->best_bandwidth_gb_s, 0);
  EXPECT_NEAR(r->pct_bandwidth, 100.0 * r->achieved_gb_s / r->bandwidth_gb_s, 1e-9);
  EXPECT_EQ(r->verify_cost_ratio, 0);  // not asked for
  // The prefill's median pass and its first pass are reported on the same scale.
  ASSERT_GT(r->prefill_tok_s, 0);
  ASSERT_GT(r->prefill_first_tok_s, 0);
  EXPECT_NEAR(r->pct_peak_first / r->pct_peak, r->prefill_first_tok_s / r->prefill_tok_s, 1e-9);
  EXPECT_NEAR(r->prefill_gops / r->peak_gops * 100.0, r->pct_peak, 1e-9);
  o.verify_tokens = 4;
  auto v = run_decode_benchmark(*model, o);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_GT(v->verify_s, 0);
  EXPECT_DOUBLE_EQ(v->verify_cost_ratio, v->verify_s / v->verify_decode_s);
  o.prefill_rounds = 0;
  EXPECT_EQ(run_decode_benchmark(*model, o).status().code(), StatusCode::kInvalidArgument);
  o.prefill_rounds = 3;
  o.verify_tokens = 17;
  EXPECT_EQ(run_decode_benchmark(*model, o).status().code(), StatusCode::kInvalidArgument);
  o.prefill_tokens = 4000;
  EXPECT_EQ(run_decode_benchmark(*model, o).status().code(), StatusCode::kInvalidArgument);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace llms
