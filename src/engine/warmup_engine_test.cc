// The warm-up pass at the engine's start (EngineConfig::warmup_pass): it changes no
// output, no prefix-cache count and no expert-load count, and it takes the growth and
// first touch of the activation buffers out of the first requests' steps.
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "engine/engine.h"
#include "engine/testing/engine_test_util.h"
#include "model/model.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

using testing::collect;
using testing::greedy_request;
using testing::kUnderAsan;

struct Run {
  std::vector<testing::Collected> out;
  int64_t prefill_computed = 0;
  double expert_imbalance = 0;
};

std::vector<int32_t> prompt_of(int n, int salt) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(3 + (i * 37 + salt) % 500);
  return p;
}

// Two prompts sharing 160 tokens, then a third alone, with and without the warm-up.
Run run_engine(const Model& model, const Tokenizer& tokenizer, bool warmup) {
  EngineConfig c;
  c.warmup_pass = warmup;
  c.kv.block_size = 16;
  c.kv.cache_bytes = 16LL << 20;
  c.batching.max_batch_tokens = 256;
  c.threads = 2;
  auto engine = Engine::create(model, tokenizer, c).value();
  Run r;
  std::vector<int32_t> a = prompt_of(160, 0), b = a;
  for (int i = 0; i < 20; ++i) a.push_back(7 + i), b.push_back(40 + i);
  const std::vector<std::vector<std::vector<int32_t>>> rounds = {{a, b}, {prompt_of(90, 11)}};
  for (const auto& prompts : rounds) {
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (const auto& p : prompts) {
      RequestParams params = greedy_request(p, 16);
      params.top_logprobs = 2;
      handles.push_back(engine->submit(params).value());
    }
    engine->run_until_idle();
    for (auto& h : handles) r.out.push_back(collect(*h));
  }
  r.prefill_computed = engine->snapshot().prefill_tokens_computed;
  r.expert_imbalance = engine->snapshot().expert_load_imbalance;
  return r;
}

void check_unchanged(const SyntheticSpec& spec) {
  SCOPED_TRACE(spec.arch + (spec.n_expert > 0 ? " moe" : ""));
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_warmup_" + spec.arch + ".gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto model = Model::load(path).value();
  auto tokenizer = Tokenizer::from_gguf(model->file()).value();
  const Run warm = run_engine(*model, *tokenizer, true);
  const Run cold = run_engine(*model, *tokenizer, false);
  ASSERT_EQ(warm.out.size(), cold.out.size());
  for (size_t i = 0; i < warm.out.size(); ++i) {
    ASSERT_EQ(warm.out[i].tokens, cold.out[i].tokens) << "request " << i;
    EXPECT_EQ(warm.out[i].text, cold.out[i].text);
    ASSERT_EQ(warm.out[i].logprobs.size(), cold.out[i].logprobs.size());
    for (size_t j = 0; j < warm.out[i].logprobs.size(); ++j) {
      EXPECT_EQ(warm.out[i].logprobs[j], cold.out[i].logprobs[j]) << "request " << i << " token " << j;
    }
    EXPECT_EQ(warm.out[i].finish.cached_prompt_tokens, cold.out[i].finish.cached_prompt_tokens);
  }
  // The blocks the warm-up wrote were never offered to the prefix cache: the second
  // prompt reuses exactly its 10 shared blocks, as without the warm-up.
  EXPECT_EQ(warm.out[1].finish.cached_prompt_tokens, 160);
  EXPECT_EQ(warm.prefill_computed, cold.prefill_computed);
  // Its dummy tokens are not counted as routed tokens.
  EXPECT_EQ(warm.expert_imbalance, cold.expert_imbalance);
  if (spec.n_expert > 0) {
    EXPECT_GT(warm.expert_imbalance, 0);
  }
  std::filesystem::remove(path);
}

TEST(WarmupEngineTest, LeavesOutputsCacheAndExpertCountsUnchanged) {
  SyntheticSpec dense;
  check_unchanged(dense);
  SyntheticSpec moe;
  moe.n_expert = 4;
  moe.n_expert_used = 2;
  check_unchanged(moe);
}

int64_t minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// The first request of max_batch_tokens prompt tokens, on a model whose activations
// for that many tokens take megabytes: its steps fault pages in without the warm-up
// and, after it, fault none that the warm-up did not already.
TEST(WarmupEngineTest, FirstFullStepFindsItsBuffersCommitted) {
  SyntheticSpec spec;
  spec.n_embd = 256, spec.n_head = 4, spec.n_head_kv = 4, spec.n_ff = 768, spec.n_vocab = 4096;
  spec.weight_type = DType::kQ8_0;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_warmup_faults.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto model = Model::load(path).value();
  auto tokenizer = Tokenizer::from_gguf(model->file()).value();
  auto faults_of_first_request = [&](bool warmup) {
    EngineConfig c;
    c.warmup_pass = warmup;
    c.batching.max_batch_tokens = 512;
    c.batching.max_running = 8;
    c.kv.cache_bytes = 32LL << 20;
    c.kv.commit_at_start = true;
    c.threads = 2;
    auto engine = Engine::create(*model, *tokenizer, c).value();
    auto h = engine->submit(greedy_request(prompt_of(512, 5), 2)).value();
    const int64_t before = minor_faults();
    engine->run_until_idle();
    const int64_t faults = minor_faults() - before;
    EXPECT_TRUE(collect(*h).finished);
    return faults;
  };
  const int64_t cold = faults_of_first_request(false);
  const int64_t warm = faults_of_first_request(true);
  // The activations of 512 tokens alone are over 4 MiB: about 3,000 faults of 4 KiB
  // pages here, fewer where transparent huge pages back them, never none. The count is
  // the whole process's: in 2 of about 11 runs of the full suite (other tests running
  // beside it) the warm run took a few, which the engine's buffers do not explain (a
  // page of the heap's growth, the kernel's reclaim or huge-page work), so the bound
  // is a fiftieth of the cold run's rather than none.
  EXPECT_GT(cold, 0);
  if (kUnderAsan) {
    EXPECT_LT(warm, cold / 2);
  } else {
    EXPECT_LT(warm, cold / 50) << "without the warm-up: " << cold;
  }
  ::testing::Test::RecordProperty("faults_with_warmup", std::to_string(warm));
  ::testing::Test::RecordProperty("faults_without_warmup", std::to_string(cold));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace llms
