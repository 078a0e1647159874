// An engine over a model split two ways (rank 0 here, rank 1 a worker thread in
// run_tensor_parallel_worker(), the ranks a ThreadGroup) serves what the engine over
// the whole model serves: the same greedy tokens, log-probabilities within 1e-4,
// through prefill chunks, batches, the prefix cache and ngram speculative decoding.
// The same with the model's layers split into two pipeline stages (rank 1 the last).
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "dist/thread_group.h"
#include "engine/engine.h"
#include "engine/kv_sizing.h"
#include "engine/tensor_parallel_worker.h"
#include "engine/testing/engine_test_util.h"
#include "model/model.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

using testing::collect;
using testing::greedy_request;

std::vector<int32_t> prompt_of(int n, int salt) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(3 + (i * 37 + salt) % 300);
  return p;
}

std::vector<testing::Collected> serve(const Model& model, const Tokenizer& tokenizer, bool speculative) {
  EngineConfig c;
  c.kv.block_size = 16;
  c.kv.cache_bytes = 4LL << 20;
  c.batching.max_batch_tokens = 64;  // the 100-token prompts take two chunks
  c.threads = 1;
  if (speculative) c.speculative.mode = SpeculativeMode::kNgram;
  auto engine = Engine::create(model, tokenizer, c);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return {};
  // Two prompts sharing 96 tokens (the second hits the prefix cache), then a third.
  std::vector<int32_t> a = prompt_of(100, 0), b = prompt_of(96, 0);
  for (int i = 0; i < 8; ++i) b.push_back(50 + i);
  std::vector<testing::Collected> out;
  for (const auto& round : {std::vector<std::vector<int32_t>>{a}, {b, prompt_of(30, 5)}}) {
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (const auto& p : round) {
      RequestParams params = greedy_request(p, 12);
      params.top_logprobs = 1;
      handles.push_back((*engine)->submit(params).value());
    }
    (*engine)->run_until_idle();
    for (auto& h : handles) out.push_back(collect(*h));
  }
  EXPECT_GT(out[1].finish.cached_prompt_tokens, 0) << "the second prompt hits the prefix cache";
  return out;
}

void check(const SyntheticSpec& spec, bool speculative, Parallelism parallel = {.tensor = 2}) {
  SCOPED_TRACE(spec.arch);
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_tp_engine.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto whole = Model::load(path).value();
  auto tokenizer = Tokenizer::from_gguf(whole->file()).value();
  const std::vector<testing::Collected> want = serve(*whole, *tokenizer, speculative);

  const int size = parallel.ranks();
  ThreadGroup group(size);
  std::vector<Status> worker_status(static_cast<size_t>(size), internal_error("not run"));
  std::vector<std::thread> workers;
  for (int r = 1; r < size; ++r) {
    workers.emplace_back([&, r] {
      Status& st = worker_status[static_cast<size_t>(r)];
      auto part = Model::load(path, &group.member(r), parallel);
      st = part.ok() ? run_tensor_parallel_worker(**part, 1) : part.status();
    });
  }
  std::vector<testing::Collected> got;
  {
    auto lead = Model::load(path, &group.member(0), parallel);
    ASSERT_TRUE(lead.ok()) << lead.status().to_string();
    got = serve(**lead, *tokenizer, speculative);
  }  // the engine's end tells the workers to stop
  for (auto& w : workers) w.join();
  std::filesystem::remove(path);
  for (int r = 1; r < size; ++r) EXPECT_TRUE(worker_status[static_cast<size_t>(r)].ok()) << worker_status[static_cast<size_t>(r)].to_string();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].tokens, want[i].tokens) << "request " << i;
    ASSERT_EQ(got[i].logprobs.size(), want[i].logprobs.size());
    for (size_t j = 0; j < want[i].logprobs.size(); ++j) {
      EXPECT_NEAR(got[i].logprobs[j], want[i].logprobs[j], 1e-4) << "request " << i << " token " << j;
    }
  }
}

SyntheticSpec spec_of(const char* arch) {
  SyntheticSpec s;
  s.arch = arch;
  s.n_vocab = 320, s.n_embd = 128, s.n_layer = 2, s.n_head = 8, s.n_head_kv = 4, s.n_ff = 256, s.n_ctx = 512;
  s.strong_layers = true;
  return s;
}

TEST(TensorParallelEngine, SplitTwoWaysServesWhatTheWholeModelServes) { check(spec_of("llama"), false); }

TEST(TensorParallelEngine, SpeculativeDecodingUnderTensorParallelism) { check(spec_of("llama"), true); }

TEST(TensorParallelEngine, MixtureOfExpertsSplitWithinExperts) {
  SyntheticSpec s = spec_of("llama");
  s.strong_layers = false;
  s.n_expert = 4, s.n_expert_used = 2;
  check(s, false);
}

TEST(PipelineParallelEngine, TwoStagesServeWhatTheWholeModelServes) {
  SyntheticSpec s = spec_of("llama");
  s.n_layer = 3;  // stages of 1 and 2 layers (the head counts with the last)
  check(s, false, {.pipeline = 2});
}

// Every stage allocates rank 0's block count: the count comes from the stage with the
// most layers, so no stage passes kv_cache_memory.
TEST(PipelineParallelEngine, TheKvBudgetHoldsForTheStageWithTheMostLayers) {
  SyntheticSpec s = spec_of("llama");
  s.n_layer = 7;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_pp_kv.gguf";
  ASSERT_TRUE(write_synthetic_model(s, path).ok());
  ThreadGroup group(3);  // loading does not communicate: one thread loads every stage
  EngineConfig c;
  c.kv.block_size = 16;
  c.kv.cache_bytes = 1LL << 20;
  int64_t most = 0;
  int32_t blocks = 0;
  for (int r = 0; r < 3; ++r) {
    auto stage = Model::load(path, &group.member(r), {.pipeline = 3}).value();
    most = std::max(most, stage->kv_config(1, 16, c.kv.k_type, c.kv.v_type).bytes_per_block());
    if (r == 0) blocks = size_kv_cache(*stage, c).value().num_blocks;
  }
  std::filesystem::remove(path);
  EXPECT_EQ(blocks, c.kv.cache_bytes / most);
}

TEST(PipelineParallelEngine, SpeculativeDecodingAcrossStages) { check(spec_of("qwen2"), true, {.pipeline = 2}); }

// A grid of 2 × 2: two stages, each split over two tensor ranks.
TEST(GridParallelEngine, TwoStagesOfTwoTensorRanksServeWhatTheWholeModelServes) {
  SyntheticSpec s = spec_of("llama");
  s.n_layer = 3;
  check(s, false, {.tensor = 2, .pipeline = 2});
}

TEST(GridParallelEngine, SpeculativeDecodingOnAGrid) { check(spec_of("qwen2"), true, {.tensor = 2, .pipeline = 2}); }

}  // namespace
}  // namespace llms
