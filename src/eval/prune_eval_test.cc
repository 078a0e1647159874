#include "eval/prune_eval.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace llms {
namespace {

// On the real model: sparsity 0 is the model itself (KL 0, full agreement), and 50%
// unstructured costs something measurable — the comparison is wired the right way.
TEST(PruneEvalTest, ZeroSparsityIsExactAndPruningCosts) {
  const std::string model = std::string(LLMSERVE_SHARED_DIR) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "needs " << model;
  std::ifstream in(std::string(LLMSERVE_SOURCE_DIR) + "/tests/data/eval_stories.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  ASSERT_FALSE(text.empty());
  auto base = Model::load(model).value();
  auto tokens = Tokenizer::from_gguf(base->file()).value()->encode(text);
  tokens.resize(std::min<size_t>(tokens.size(), 512));
  PruneEvalOptions o;
  o.sparsities = {0.0, 0.5};
  o.temp_dir = ::testing::TempDir();
  ThreadPool pool(2);
  const auto r = evaluate_pruning(model, tokens, o, pool);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->rows.size(), 2u);
  EXPECT_EQ(r->rows[0].kl_divergence, 0.0);
  EXPECT_EQ(r->rows[0].top1_agreement, 1.0);
  EXPECT_EQ(r->rows[0].perplexity, r->base_perplexity);
  EXPECT_DOUBLE_EQ(r->rows[1].pruned_share, 0.5);
  EXPECT_GT(r->rows[1].kl_divergence, 0.01);
  EXPECT_LT(r->rows[1].top1_agreement, 1.0);
  EXPECT_GT(r->rows[1].perplexity, r->base_perplexity);
  // A bad level is the pruner's clear error.
  o.sparsities = {1.5};
  EXPECT_NE(evaluate_pruning(model, tokens, o, pool).status().message().find("[0, 1)"), std::string::npos);
}

}  // namespace
}  // namespace llms
