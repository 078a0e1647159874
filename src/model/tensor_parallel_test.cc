// A model split over ranks (threads of one process here, dist/thread_group.h; MPI
// processes in tests/server_tensor_parallel_test.cc) gives rank 0 the logits of the
// whole model: the same top token and log-probabilities within 1e-4, for every
// architecture and for quantized weights cut on block boundaries. The same for the
// layers split into pipeline stages (each holding its layers' weights and KV only),
// and the byte balance that cuts them.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <thread>

#include "dist/thread_group.h"
#include "model/model.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

constexpr int kBlock = 16;

// Two sequences: a prompt each (one chunk, then the second in two), then decodes of
// both in one batch; every pass asks for every position's logits.
struct Step {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<int64_t> start;
  std::vector<int> seq;
};

std::vector<Step> steps(int vocab) {
  auto tok = [vocab](int i) { return static_cast<int32_t>((i * 37 + 11) % vocab); };
  std::vector<Step> s;
  s.push_back({{{tok(1), tok(2), tok(3), tok(4), tok(5), tok(6), tok(7)}}, {0}, {0}});
  s.push_back({{{tok(8), tok(9), tok(10)}, {tok(11), tok(12), tok(13), tok(14)}}, {0, 7}, {1, 0}});
  s.push_back({{{tok(15), tok(16)}}, {3}, {1}});
  for (int d = 0; d < 4; ++d) s.push_back({{{tok(20 + d)}, {tok(30 + d)}}, {11 + d, 5 + d}, {0, 1}});
  return s;
}

// The log-softmax of every row of logits each step produces.
std::vector<std::vector<float>> run(const Model& m) {
  KvCache kv(m.kv_config(8, kBlock, DType::kF32, DType::kF32));
  ForwardState state;
  ThreadPool pool(1);
  ForwardOutput out;
  const std::vector<int32_t> tables[2] = {{0, 1, 2}, {3, 4, 5}};
  std::vector<std::vector<float>> rows;
  for (const Step& step : steps(m.config().n_vocab)) {
    std::vector<SequenceChunk> chunks;
    for (size_t i = 0; i < step.tokens.size(); ++i) {
      chunks.push_back({step.tokens[i], step.start[i], tables[step.seq[i]], LogitsWanted::kAll});
    }
    const Status s = m.forward(chunks, kv, state, pool, out);
    EXPECT_TRUE(s.ok()) << s.to_string();
    const int64_t n = static_cast<int64_t>(out.logits.size()) / std::max<int64_t>(1, out.n_vocab);
    for (int64_t r = 0; r < n; ++r) {
      const float* x = out.row(r);
      const float mx = *std::max_element(x, x + out.n_vocab);
      double sum = 0;
      for (int64_t j = 0; j < out.n_vocab; ++j) sum += std::exp(static_cast<double>(x[j] - mx));
      std::vector<float> lp(x, x + out.n_vocab);
      for (float& v : lp) v = static_cast<float>(v - mx - std::log(sum));
      rows.push_back(std::move(lp));
    }
  }
  return rows;
}

// The model at `path` (a GGUF file or a Hugging Face directory) split over `ranks`.
void check_split_of(const std::string& path, Parallelism parallel, const std::string& label) {
  const int ranks = parallel.ranks();
  auto whole = Model::load(path);
  ASSERT_TRUE(whole.ok()) << whole.status().to_string();
  const std::vector<std::vector<float>> want = run(**whole);
  ThreadGroup group(ranks);
  std::vector<std::vector<std::vector<float>>> got(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      auto part = Model::load(path, &group.member(r), parallel);
      ASSERT_TRUE(part.ok()) << part.status().to_string();
      if (parallel.tensor > 1) {
        EXPECT_LT((*part)->config().n_head_kv, (*whole)->config().n_head_kv);
      }
      if (parallel.pipeline > 1) {  // a stage holds its layers' weights and KV only
        EXPECT_LT((*part)->kv_config(8, kBlock, DType::kF32, DType::kF32).n_layer, (*whole)->config().n_layer);
      }
      EXPECT_LT((*part)->weights_memory().owned_bytes, (*whole)->weights_memory().owned_bytes);
      got[static_cast<size_t>(r)] = run(**part);
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(got[0].size(), want.size()) << label;
  for (int r = 1; r < ranks; ++r) EXPECT_TRUE(got[static_cast<size_t>(r)].empty()) << "only rank 0 gets logits";
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& a = want[i];
    const auto& b = got[0][i];
    EXPECT_EQ(std::max_element(a.begin(), a.end()) - a.begin(), std::max_element(b.begin(), b.end()) - b.begin())
        << label << " row " << i;
    float worst = 0;
    for (size_t j = 0; j < a.size(); ++j) worst = std::max(worst, std::abs(a[j] - b[j]));
    EXPECT_LT(worst, 1e-4f) << label << " row " << i;
  }
}

void check_split(const SyntheticSpec& spec, Parallelism parallel) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_tp_" + spec.arch + ".gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  check_split_of(path, parallel, spec.arch + " " + std::string(dtype_name(spec.weight_type)));
  std::filesystem::remove(path);
}

SyntheticSpec small(const char* arch) {
  SyntheticSpec s;
  s.arch = arch;
  s.n_vocab = 320, s.n_embd = 128, s.n_layer = 2, s.n_head = 8, s.n_head_kv = 4, s.n_ff = 256, s.n_ctx = 128;
  return s;
}

// What loading `spec` as rank 0 of a group of `size` split as `parallel` says (a
// refusal is expected: the planning before any collective).
Status load_as_rank_zero(const SyntheticSpec& spec, int size, Parallelism parallel) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_refused.gguf";
  if (Status s = write_synthetic_model(spec, path); !s.ok()) return s;
  ThreadGroup group(size, 1);
  auto m = Model::load(path, &group.member(0), parallel);
  std::filesystem::remove(path);
  return m.status();
}

// Each dense architecture we serve (`n_layer` layers) split as `parallel`.
void check_dense_architectures(Parallelism parallel, int n_layer) {
  for (const char* arch : {"llama", "qwen2", "phi3", "gemma2", "gpt2"}) {
    SCOPED_TRACE(arch);
    SyntheticSpec s = small(arch);
    s.n_layer = n_layer;
    if (std::string(arch) == "phi3") s.n_head_kv = s.n_head;
    if (std::string(arch) == "gemma2") s.head_dim = 32, s.tied_output = true;
    if (std::string(arch) == "gpt2") s.n_head = s.n_head_kv = 4, s.tied_output = true;
    check_split(s, parallel);
  }
}

// Mixtral (LLaMA with 4 experts) and Qwen2-MoE (8 experts and a shared one) split as `parallel`.
void check_mixtures(Parallelism parallel, int n_layer) {
  SyntheticSpec mixtral = small("llama");
  mixtral.n_layer = n_layer, mixtral.n_expert = 4, mixtral.n_expert_used = 2;
  check_split(mixtral, parallel);
  SyntheticSpec qwen = small("qwen2moe");
  qwen.n_layer = n_layer, qwen.n_expert = 8, qwen.n_expert_used = 3, qwen.n_ff_exp = 64;
  check_split(qwen, parallel);
}

TEST(TensorParallel, EveryArchitectureSplitTwoWaysMatchesTheWholeModel) { check_dense_architectures({.tensor = 2}, 2); }

TEST(TensorParallel, MixturesOfExpertsSplitWithinEachExpert) { check_mixtures({.tensor = 2}, 2); }

TEST(TensorParallel, QuantizedWeightsSplitOnBlockBoundariesUnevenly) {
  // Q8_0 over 3 ranks: 4 KV heads as 1, 2, 1 (one KV head's columns of attn_output are one 32-wide block).
  SyntheticSpec q8 = small("llama");
  q8.weight_type = DType::kQ8_0;
  check_split(q8, {.tensor = 3});
  // Q4_K: 256-wide super-blocks; an FFN of 768 over 2 ranks is 512 + 256.
  SyntheticSpec q4 = small("llama");
  q4.n_embd = 512, q4.n_head = 8, q4.n_head_kv = 4, q4.n_ff = 768, q4.weight_type = DType::kQ4_K;
  check_split(q4, {.tensor = 2});
}

TEST(TensorParallel, HuggingFaceDirectorySplitTwoWaysMatchesTheWholeModel) {
  // Its Q and K rows are stored in the other rotary order: each rank packs its heads'
  // rows from where they lie in the mapped file.
  const std::string dir = std::string(LLMSERVE_SHARED_DIR) + "/models/tinystories-656k/hf";
  if (!std::filesystem::exists(dir + "/model.safetensors")) GTEST_SKIP() << "needs " << dir;
  check_split_of(dir, {.tensor = 2}, "tinystories-656k/hf");
}

TEST(TensorParallel, FewerKvHeadsThanRanksIsRefusedWithTheLimit) {
  // MQA: one KV head for all 8 query heads cannot be split over two ranks.
  SyntheticSpec mqa = small("llama");
  mqa.n_head_kv = 1;
  const Status s = load_as_rank_zero(mqa, 2, {.tensor = 2});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("1 KV head, fewer than the 2 ranks"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("--tensor-parallel 1 or fewer"), std::string::npos);
}

TEST(PipelineParallel, EveryArchitectureInTwoStagesMatchesTheWholeModel) {
  check_dense_architectures({.pipeline = 2}, 3);
  check_mixtures({.pipeline = 2}, 3);
}

TEST(PipelineParallel, ThreeStagesOfQuantizedWeightsMatchTheWholeModel) {
  SyntheticSpec q8 = small("llama");
  q8.n_layer = 4, q8.weight_type = DType::kQ8_0;
  check_split(q8, {.pipeline = 3});
}

TEST(PipelineParallel, StoriesInTwoStagesMatchesTheWholeModel) {
  const std::string path = std::string(LLMSERVE_SHARED_DIR) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "needs " << path;
  check_split_of(path, {.pipeline = 2}, "stories260K");
}

TEST(PipelineParallel, HuggingFaceDirectoryInTwoStagesMatchesTheWholeModel) {
  const std::string dir = std::string(LLMSERVE_SHARED_DIR) + "/models/tinystories-656k/hf";
  if (!std::filesystem::exists(dir + "/model.safetensors")) GTEST_SKIP() << "needs " << dir;
  check_split_of(dir, {.pipeline = 2}, "tinystories-656k/hf");
}

TEST(PipelineParallel, HiddenRowsAndPartialLogitsComeBackToRankZero) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_pp_hidden.gguf";
  SyntheticSpec spec = small("llama");
  spec.n_layer = 3;
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  // Three sequences in one pass: hidden rows and no logits, the last row's logits, every row's.
  const std::vector<int32_t> a = {5, 6, 7, 8}, b = {9, 10}, c = {11, 12, 13};
  const std::vector<int32_t> tables[3] = {{0}, {1}, {2}};
  auto pass = [&](const Model& m, ForwardOutput& out) {
    KvCache kv(m.kv_config(4, kBlock, DType::kF32, DType::kF32));
    ForwardState state;
    ThreadPool pool(1);
    std::vector<SequenceChunk> chunks = {{a, 0, tables[0], LogitsWanted::kNone},
                                         {b, 0, tables[1], LogitsWanted::kLast},
                                         {c, 0, tables[2], LogitsWanted::kAll}};
    chunks[0].hidden = chunks[1].hidden = true;
    const Status s = m.forward(chunks, kv, state, pool, out);
    EXPECT_TRUE(s.ok()) << s.to_string();
  };
  ForwardOutput want;
  pass(*Model::load(path).value(), want);
  // Two stages, then a grid of two stages of two tensor ranks (whose last stage's
  // tensor rank 1 also holds the hidden rows, and must not send them).
  for (const Parallelism parallel : {Parallelism{.pipeline = 2}, Parallelism{.tensor = 2, .pipeline = 2}}) {
    SCOPED_TRACE(parallel.ranks());
    ThreadGroup group(parallel.ranks());
    std::vector<ForwardOutput> got(static_cast<size_t>(parallel.ranks()));
    std::vector<std::thread> threads;
    for (int r = 0; r < parallel.ranks(); ++r) {
      threads.emplace_back([&, r] { pass(*Model::load(path, &group.member(r), parallel).value(), got[static_cast<size_t>(r)]); });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(got[0].first_row, want.first_row);
    EXPECT_EQ(got[0].first_hidden_row, want.first_hidden_row);
    ASSERT_EQ(got[0].logits.size(), want.logits.size());
    ASSERT_EQ(got[0].hidden.size(), want.hidden.size());
    for (size_t i = 0; i < want.logits.size(); ++i) ASSERT_NEAR(got[0].logits[i], want.logits[i], 1e-4) << i;
    for (size_t i = 0; i < want.hidden.size(); ++i) ASSERT_NEAR(got[0].hidden[i], want.hidden[i], 1e-4) << i;
    for (size_t r = 1; r < got.size(); ++r) {
      EXPECT_TRUE(got[r].logits.empty() && got[r].hidden.empty()) << "only rank 0 gets the outputs";
    }
  }
  std::filesystem::remove(path);
}

// Tensor parallelism within pipeline stages: a grid of 2 × 2 ranks (rank = stage × 2 +
// tensor rank), each holding its heads and columns of its stage's layers.
TEST(GridParallel, EveryArchitectureOnTwoStagesOfTwoRanksMatchesTheWholeModel) {
  check_dense_architectures({.tensor = 2, .pipeline = 2}, 3);
  check_mixtures({.tensor = 2, .pipeline = 2}, 3);
}

// Q8_0 on a grid of 3 tensor ranks × 2 stages: uneven head shares in every stage.
TEST(GridParallel, QuantizedWeightsOnThreeRanksInTwoStagesMatchTheWholeModel) {
  SyntheticSpec q8 = small("llama");
  q8.n_layer = 3, q8.weight_type = DType::kQ8_0;
  check_split(q8, {.tensor = 3, .pipeline = 2});
}

TEST(GridParallel, StoriesOnTwoStagesOfTwoRanksMatchesTheWholeModel) {
  const std::string path = std::string(LLMSERVE_SHARED_DIR) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "needs " << path;
  check_split_of(path, {.tensor = 2, .pipeline = 2}, "stories260K");
}

TEST(GridParallel, AGroupOfAnotherSizeIsRefused) {
  const Status s = load_as_rank_zero(small("llama"), 3, {.tensor = 2, .pipeline = 2});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor parallelism 2 × pipeline parallelism 2 needs 4 ranks, the group has 3"),
            std::string::npos)
      << s.to_string();
}

TEST(PipelineParallel, StagesBalanceBytesWithTheHeadOnTheLast) {
  const int64_t even[] = {10, 10, 10, 10};
  EXPECT_EQ(balance_stages(even, 0, 2).value(), (std::vector<int>{0, 2, 4}));
  // The head (25) weighs on the last stage: it takes one layer.
  EXPECT_EQ(balance_stages(even, 25, 2).value(), (std::vector<int>{0, 3, 4}));
  const int64_t uneven[] = {40, 10, 10, 10, 10};
  EXPECT_EQ(balance_stages(uneven, 0, 2).value(), (std::vector<int>{0, 1, 5}));
  EXPECT_EQ(balance_stages(uneven, 0, 5).value(), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_FALSE(balance_stages(even, 0, 5).ok());  // fewer layers than stages
}

TEST(PipelineParallel, MoreStagesThanLayersIsRefused) {
  const Status s = load_as_rank_zero(small("llama"), 3, {.pipeline = 3});  // 2 layers
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("2 layers cannot be split into 3 pipeline stages"), std::string::npos) << s.to_string();
}

TEST(TensorShard, SplitPointsFallOnStepsAsEvenlyAsTheyCan) {
  auto tiny_llama = split_points(5632, 256, 4);  // TinyLlama's FFN over 4 ranks, Q4_K
  ASSERT_TRUE(tiny_llama.ok());
  EXPECT_EQ(*tiny_llama, (std::vector<int64_t>{0, 1536, 2816, 4352, 5632}));
  auto heads = split_points(4, 1, 3);
  ASSERT_TRUE(heads.ok());
  EXPECT_EQ(*heads, (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_FALSE(split_points(256, 256, 2).ok());  // one block cannot go to two ranks
  EXPECT_FALSE(split_points(1, 1, 2).ok());      // MQA's one KV head
}

}  // namespace
}  // namespace llms
