#include "eval/precision_eval.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tools/quantizer.h"

namespace llms {
namespace {

const std::string kModel = std::string(LLMSERVE_SHARED_DIR) + "/models/stories260K.gguf";

struct Fixture {
  std::unique_ptr<Model> cheap, best;
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<int32_t> text;
  std::vector<PrecisionEvalVariant> variants;

  Fixture() {
    cheap = quantized_model(kModel, DType::kQ4_K, 1).value();
    best = quantized_model(kModel, DType::kF16, 1).value();
    tokenizer = Tokenizer::from_gguf(best->file()).value();
    std::ifstream in(std::string(LLMSERVE_SOURCE_DIR) + "/tests/data/eval_stories.txt");
    text = tokenizer->encode(std::string((std::istreambuf_iterator<char>(in)), {}));
    variants = {{"q4_k", cheap.get()}, {"f16", best.get()}};
  }
};

PrecisionEvalOptions small(std::vector<double> bounds, int prompt_max) {
  PrecisionEvalOptions o;
  o.policy.prompt_max = {prompt_max};
  o.policy.max_tokens_max = {1000};
  o.policy.window = 1;
  o.entropy_bounds = std::move(bounds);
  o.requests = 4;
  o.short_prompt = 4;
  o.long_prompt = 12;
  o.gen = 8;
  o.rounds = 0;
  return o;
}

// Auto rows that never leave one variant equal that variant's row; the best row
// against itself has KL 0 and top-1 1; the cost is prompt + generated tokens times
// the variant's bytes per token.
TEST(PrecisionEvalTest, AutoWithoutFallbackIsItsVariantAndCostsAddUp) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "needs " << kModel;
  Fixture f;
  // Bound 0: no fallback. Prompt limit 4: short requests stay cheap, long go best.
  auto r = evaluate_precision(f.variants, *f.tokenizer, f.text, small({0.0}, 4));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->rows.size(), 3u);
  const auto& cheap = r->rows[0];
  const auto& best = r->rows[1];
  const auto& automatic = r->rows[2];
  EXPECT_EQ(best.kl, 0.0);
  EXPECT_EQ(best.top1, 1.0);
  EXPECT_EQ(best.ppl_ratio, 1.0);
  EXPECT_EQ(best.cost_ratio, 1.0);
  EXPECT_GT(cheap.kl, 0.0);
  EXPECT_EQ(r->scored_positions, 4 * 8);
  const double bpt0 = static_cast<double>(r->bytes_per_token[0]), bpt1 = static_cast<double>(r->bytes_per_token[1]);
  EXPECT_LT(bpt0, bpt1);
  // Two short (4 + 8 tokens) and two long (12 + 8) requests, over 32 generated tokens.
  EXPECT_DOUBLE_EQ(cheap.bytes_per_token, (2 * 12 + 2 * 20) * bpt0 / 32);
  EXPECT_DOUBLE_EQ(automatic.bytes_per_token, (2 * 12 * bpt0 + 2 * 20 * bpt1) / 32);
  EXPECT_EQ(automatic.first_variant, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(automatic.fallbacks, 0);
  // Per request, auto is exactly the variant it was routed to.
  for (size_t i = 0; i < 4; ++i) {
    const auto& same = i % 2 == 0 ? cheap.requests[i] : best.requests[i];
    EXPECT_EQ(automatic.requests[i].kl, same.kl) << i;
    EXPECT_EQ(automatic.requests[i].ppl, same.ppl) << i;
  }
}

// A bound no distribution is under moves every request up at its first token: auto's
// quality is the best variant's, and its cost adds the cheap prefill and the one token
// it computed before moving.
TEST(PrecisionEvalTest, FallbackAtTheFirstTokenServesLikeTheBestAndCostsMore) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "needs " << kModel;
  Fixture f;
  auto o = small({1e-9}, 1000);  // every request starts cheap
  o.rounds = 1;                  // and is served once through the router, to the end
  auto r = evaluate_precision(f.variants, *f.tokenizer, f.text, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const auto& automatic = r->rows[2];
  EXPECT_EQ(automatic.kl, 0.0);
  EXPECT_EQ(automatic.ppl_ratio, 1.0);
  EXPECT_EQ(automatic.fallbacks, 4);
  EXPECT_EQ(automatic.first_variant, (std::vector<int64_t>{4, 0}));
  const double bpt0 = static_cast<double>(r->bytes_per_token[0]), bpt1 = static_cast<double>(r->bytes_per_token[1]);
  const double per_short = 4 * bpt0 + bpt0 + (4 + 8) * bpt1, per_long = 12 * bpt0 + bpt0 + (12 + 8) * bpt1;
  EXPECT_DOUBLE_EQ(automatic.bytes_per_token, (2 * per_short + 2 * per_long) / 32);
  EXPECT_GT(automatic.cost_ratio, 1.0);
  for (const auto& q : automatic.requests) EXPECT_EQ(q.fallback_at, 0);
  for (const auto& row : r->rows) EXPECT_GT(row.tok_s, 0.0);
}

TEST(PrecisionEvalTest, BadOptionsAreNamed) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "needs " << kModel;
  Fixture f;
  auto o = small({0.0}, 4);
  o.policy.prompt_max = {};
  EXPECT_NE(evaluate_precision(f.variants, *f.tokenizer, f.text, o).status().message().find("precision_prompt_max"),
            std::string::npos);
  o = small({0.0}, 4);
  o.long_prompt = 2;
  EXPECT_NE(evaluate_precision(f.variants, *f.tokenizer, f.text, o).status().message().find("--long-prompt"),
            std::string::npos);
  o = small({0.0}, 4);
  EXPECT_NE(evaluate_precision(std::span(f.variants).first(1), *f.tokenizer, f.text, o).status().message().find(
                "--variants"),
            std::string::npos);
  EXPECT_NE(evaluate_precision(f.variants, *f.tokenizer, std::span(f.text).first(10), o).status().message().find(
                "tokens"),
            std::string::npos);
}

}  // namespace
}  // namespace llms
