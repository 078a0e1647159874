#include "deploy/cross_score.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "tools/synthetic.h"

namespace llms {
namespace {

std::unique_ptr<Model> tiny() {
  const std::string p = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_cross_tiny.gguf";
  EXPECT_TRUE(write_synthetic_model(synthetic_preset("tiny").value(), p).ok());
  auto m = Model::load(p);
  std::filesystem::remove(p);
  return std::move(m).value();
}

TEST(CrossScoreTest, AgreesWithPerplexityAndIsZeroKlAgainstItself) {
  const auto model = tiny();
  ThreadPool pool(1);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 40; ++i) tokens.push_back((i * 7 + 3) % 64);
  const EvalSide side{model.get()};
  // Every position after the first is "output": the mean NLL is log perplexity.
  auto all = cross_score(tokens, 1, side, side, pool);
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  PerplexityOptions opts;
  opts.ctx = static_cast<int>(tokens.size());
  auto ppl = evaluate_perplexity(tokens, side, {}, opts, pool);
  ASSERT_TRUE(ppl.ok());
  EXPECT_EQ(all->tokens, 39);
  EXPECT_NEAR(all->nll_self, std::log(ppl->perplexity), 1e-4);
  EXPECT_DOUBLE_EQ(all->nll_other, all->nll_self);
  EXPECT_NEAR(all->kl, 0, 1e-9);
  // Only the output's positions count.
  auto out = cross_score(tokens, 30, side, side, pool);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->tokens, 10);
  EXPECT_FALSE(cross_score(tokens, 40, side, side, pool).ok());  // no output
}

}  // namespace
}  // namespace llms
