#include "eval/early_exit_eval.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace llms {
namespace {

const std::string kModel = std::string(LLMSERVE_SHARED_DIR) + "/models/stories260K.gguf";

std::vector<int32_t> text_tokens(const Model& m, size_t n) {
  std::ifstream in(std::string(LLMSERVE_SOURCE_DIR) + "/tests/data/eval_stories.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_FALSE(text.empty());
  auto tokens = Tokenizer::from_gguf(m.file()).value()->encode(text);
  tokens.resize(std::min(tokens.size(), n));
  return tokens;
}

// Threshold 1 is full depth (agreement 1, KL 0, no exit); a threshold every position
// reaches exits everything at the first exit point; one between mixes both, and the
// shares add up with the mean layers run.
TEST(EarlyExitEvalTest, SharesAgreementAndKlAreWiredTheRightWay) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "needs " << kModel;
  auto model = Model::load(kModel).value();
  const auto tokens = text_tokens(*model, 256);
  EarlyExitEvalOptions o;
  o.layers = {2, 3, 4};
  o.thresholds = {1.0, 0.5, 1e-9};
  o.ctx = 64;
  o.decode_prompts = 2;
  o.prompt_tokens = 8;
  o.decode_tokens = 16;
  const auto r = evaluate_early_exit(*model, tokens, o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->positions, 256);
  ASSERT_EQ(r->lens.size(), 3u);
  ASSERT_EQ(r->rows.size(), 3u);
  const ThresholdRow& never = r->rows[0];
  EXPECT_EQ(never.full_share, 1.0);
  EXPECT_EQ(never.top1_agreement, 1.0);
  EXPECT_EQ(never.kl, 0.0);
  EXPECT_EQ(never.mean_layers, 5.0);
  EXPECT_EQ(never.decode_match, 1.0);
  EXPECT_EQ(never.decode_exit_share, 0.0);
  const ThresholdRow& all = r->rows[2];
  EXPECT_EQ(all.exit_share[0], 1.0);
  EXPECT_EQ(all.mean_layers, 2.0);
  // Everything read at layer 2: the agreement is the lens's at layer 2... with filled
  // keys instead of full-depth ones, so only close to it.
  EXPECT_LT(all.top1_agreement, 1.0);
  EXPECT_GT(all.kl, 0.0);
  const ThresholdRow& mid = r->rows[1];
  double exited = 0, layers = 0;
  for (size_t i = 0; i < 3; ++i) exited += mid.exit_share[i], layers += mid.exit_share[i] * o.layers[i];
  EXPECT_GT(exited, 0.0);
  EXPECT_GT(mid.full_share, 0.0);
  EXPECT_NEAR(exited + mid.full_share, 1.0, 1e-12);
  EXPECT_NEAR(layers + 5 * mid.full_share, mid.mean_layers, 1e-9);
  EXPECT_GE(mid.top1_agreement, all.top1_agreement);
  EXPECT_LE(mid.kl, all.kl);
  for (const auto& row : r->rows) EXPECT_GT(row.exit_tok_s, 0.0);
  // The lens reads deeper layers better on this model (a fact of its weights, the
  // same every run).
  EXPECT_LT(r->lens[0].top1_agreement, r->lens[2].top1_agreement);
}

TEST(EarlyExitEvalTest, BadOptionsAreNamed) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "needs " << kModel;
  auto model = Model::load(kModel).value();
  const auto tokens = text_tokens(*model, 256);
  auto refused = [&](EarlyExitEvalOptions o, const std::string& what) {
    const auto r = evaluate_early_exit(*model, tokens, o);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
  };
  EarlyExitEvalOptions o;
  o.thresholds = {0.9};
  o.ctx = 64;
  auto bad = o;
  bad.thresholds = {};
  refused(bad, "--thresholds");
  bad = o;
  bad.thresholds = {1.5};
  refused(bad, "--exit-threshold");
  bad = o;
  bad.layers = {5};
  refused(bad, "--exit-layers");
  bad = o;
  bad.ctx = 512;
  refused(bad, "window");
  bad = o;
  bad.prompt_tokens = 64;
  refused(bad, "--prompt-tokens");
}

}  // namespace
}  // namespace llms
