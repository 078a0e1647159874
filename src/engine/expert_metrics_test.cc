#include "engine/expert_metrics.h"

#include <gtest/gtest.h>

#include <memory>

#include "engine/engine.h"
#include "engine/model_runner.h"
#include "metrics/metrics.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

TEST(ExpertMetricsTest, ImbalanceIsMaxOverMean) {
  const int64_t even[] = {5, 5, 5, 5};
  EXPECT_DOUBLE_EQ(load_imbalance(even), 1.0);
  const int64_t skewed[] = {6, 2, 0, 0};  // mean 2
  EXPECT_DOUBLE_EQ(load_imbalance(skewed), 3.0);
  const int64_t none[] = {0, 0};
  EXPECT_DOUBLE_EQ(load_imbalance(none), 1.0);
}

TEST(ExpertMetricsTest, CountersAddWhatWasRoutedSinceTheLastObservation) {
  Registry r;
  ExpertLoadMetrics m(r);
  // Two layers of three experts.
  std::vector<int64_t> load = {2, 0, 0, 1, 1, 0};
  m.observe(load, 3);
  load = {3, 1, 0, 1, 2, 1};
  m.observe(load, 3);
  const std::string text = r.render();
  EXPECT_NE(text.find("llmserve_moe_routed_tokens_total{expert=\"0\"} 4"), std::string::npos) << text;
  EXPECT_NE(text.find("llmserve_moe_routed_tokens_total{expert=\"1\"} 3"), std::string::npos) << text;
  EXPECT_NE(text.find("llmserve_moe_routed_tokens_total{expert=\"2\"} 1"), std::string::npos) << text;
  // Layer 0: {3, 1, 0}, mean 4/3, max 3: 2.25. All: {4, 3, 1}: 4 / (8/3) = 1.5.
  EXPECT_NE(text.find("llmserve_moe_load_imbalance_ratio{layer=\"0\"} 2.25"), std::string::npos) << text;
  EXPECT_NE(text.find("llmserve_moe_load_imbalance_ratio{layer=\"all\"} 1.5"), std::string::npos) << text;
}

// Served end to end: every token of every layer is routed to experts_used experts.
TEST(ExpertMetricsTest, EngineCountsEveryRoutedToken) {
  SyntheticSpec spec = synthetic_preset("tiny").value();
  spec.n_expert = 4, spec.n_expert_used = 2, spec.seed = 3;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_moe_engine.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto tok = Tokenizer::from_gguf((*model)->file());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EngineConfig c;
  c.batching.max_running = 4;
  c.batching.max_batch_tokens = 256;
  auto runner = std::make_unique<LocalModelRunner>(**model, (*model)->kv_config(64, 16, DType::kF16, DType::kF16), 1);
  Registry registry;
  Engine engine(std::move(runner), **tok, c, (*model)->identity(), 64, 512, &registry);
  std::vector<std::shared_ptr<RequestHandle>> hs;
  int64_t tokens = 0;
  for (int i = 0; i < 3; ++i) {
    RequestParams p;
    p.prompt = {1, static_cast<int32_t>(10 + i), 20, 30, 40};
    p.max_tokens = 6;
    p.ignore_eos = true;
    p.sampling.temperature = 0.0f;
    tokens += 5 + 6 - 1;  // every prompt token and every generated one but the last is computed
    hs.push_back(engine.submit(p).value());
  }
  engine.run_until_idle();
  const std::string text = registry.render();
  double routed = 0;
  for (int e = 0; e < 4; ++e) {
    const std::string key = "llmserve_moe_routed_tokens_total{expert=\"" + std::to_string(e) + "\"} ";
    const size_t at = text.find(key);
    ASSERT_NE(at, std::string::npos) << text;
    routed += std::stod(text.substr(at + key.size()));
  }
  EXPECT_EQ(routed, static_cast<double>(tokens * spec.n_layer * spec.n_expert_used));
  EXPECT_GE(engine.snapshot().expert_load_imbalance, 1.0);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace llms
