// The forward pass of each dense architecture against the double-precision reference
// (model/double_reference.h).
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "io/gguf_file.h"
#include "io/gguf_writer.h"
#include "model/testing/double_reference.h"
#include "model/model.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

using reference::check_model;
using reference::read;
using reference::Vec;

TEST(ModelReferenceTest, StoriesMatchesDoubleReference) {
  const std::string path = std::string(LLMSERVE_SHARED_DIR) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "needs " << path;
  check_model(path, {1, 403, 407, 261, 138, 263, 306, 266, 300, 375, 500, 13, 2, 511});
}

TEST(ModelReferenceTest, GeneratedGqaModelWithQkvBiasMatchesDoubleReference) {
  SyntheticSpec spec;
  spec.arch = "qwen2";
  spec.n_vocab = 300, spec.n_embd = 64, spec.n_layer = 2, spec.n_head = 8, spec.n_head_kv = 2, spec.n_ff = 96;
  spec.seed = 11;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_gqa_bias.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  check_model(path, {1, 5, 77, 299, 8, 100, 42, 42, 3, 17});
  std::filesystem::remove(path);
}

TEST(ModelReferenceTest, GeneratedF16ModelMatchesDoubleReference) {
  SyntheticSpec spec;
  spec.n_vocab = 260, spec.n_embd = 32, spec.n_layer = 1, spec.n_head = 4, spec.n_head_kv = 4, spec.n_ff = 64;
  spec.weight_type = DType::kF16;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_f16.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  check_model(path, {1, 2, 3, 250, 9});
  std::filesystem::remove(path);
}

TEST(ModelReferenceTest, GeneratedGpt2MatchesDoubleReference) {
  for (bool tied : {true, false}) {
    SyntheticSpec spec;
    spec.arch = "gpt2";
    spec.n_vocab = 300, spec.n_embd = 64, spec.n_layer = 2, spec.n_head = 4, spec.n_head_kv = 4, spec.n_ff = 256;
    spec.n_ctx = 32, spec.tied_output = tied, spec.seed = 5;
    const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_gpt2.gguf";
    ASSERT_TRUE(write_synthetic_model(spec, path).ok());
    check_model(path, {1, 5, 77, 299, 8, 100, 42, 42, 3, 17, 250, 6});
    std::filesystem::remove(path);
  }
}

TEST(ModelReferenceTest, GeneratedPhi3MatchesDoubleReferenceWithShortAndLongFactors) {
  SyntheticSpec spec;
  spec.arch = "phi3";
  spec.n_vocab = 300, spec.n_embd = 96, spec.n_layer = 2, spec.n_head = 4, spec.n_head_kv = 2, spec.n_ff = 160;
  spec.n_ctx = 32768, spec.seed = 9;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_phi3.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->config().n_ctx_orig, 4096);
  EXPECT_GT((*model)->config().rope_attn_factor, 1.1f);
  const std::vector<int32_t> tokens = {1, 5, 77, 299, 8, 100, 42, 42, 3, 17, 250, 6, 9, 9, 31};
  check_model(path, tokens, 0);      // short factors
  check_model(path, tokens, 8192);   // long factors: the context passes 4096
  // Phi-3-mini-4k's layout: a window shorter than the context, computed on every layer
  // (here 5, over 25 tokens: windows within and across check_model's blocks of 16).
  spec.n_ctx = 4096, spec.sliding_window = 5;
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto windowed = Model::load(path);
  ASSERT_TRUE(windowed.ok()) << windowed.status().to_string();
  EXPECT_EQ((*windowed)->config().window_of(0), 5);
  EXPECT_EQ((*windowed)->config().window_of(1), 5);
  EXPECT_EQ((*windowed)->config().max_positions(), 0);
  std::vector<int32_t> longer = tokens;
  for (int i = 0; i < 10; ++i) longer.push_back((i * 37 + 11) % 300);
  check_model(path, longer, 0);
  std::filesystem::remove(path);
}

TEST(ModelReferenceTest, GeneratedLlamaWithRopeScalingMatchesDoubleReference) {
  for (const char* scaling : {"linear", "llama3"}) {
    SyntheticSpec spec;
    spec.n_vocab = 300, spec.n_embd = 128, spec.n_layer = 2, spec.n_head = 4, spec.n_head_kv = 2, spec.n_ff = 96;
    spec.rope_scaling = scaling, spec.strong_layers = true, spec.seed = 3;
    const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_rope_" + scaling + ".gguf";
    ASSERT_TRUE(write_synthetic_model(spec, path).ok());
    // Long enough that the divided low frequencies turn by a visible angle.
    std::vector<int32_t> tokens;
    for (int i = 0; i < 64; ++i) tokens.push_back((i * 53 + 7) % 300);
    check_model(path, tokens);
    // The low frequencies turn too little in 64 positions for the logits to show the
    // divisors, so the table is checked itself: base^(-2i/d) / divisor.
    auto model = Model::load(path);
    ASSERT_TRUE(model.ok());
    auto file = GgufFile::open(path);
    ASSERT_TRUE(file.ok());
    const std::vector<float>& inv = (*model)->rope_inv_freq(false);
    const int hd = spec.n_embd / spec.n_head;
    ASSERT_EQ(inv.size(), static_cast<size_t>(hd / 2));
    const Vec divisors = std::string(scaling) == "linear" ? Vec(hd / 2, 4.0) : read(*file, "rope_freqs.weight");
    EXPECT_GT(divisors.back(), 3.9);  // 4 (linear), or Llama-3.1's 8 at the lowest frequency
    for (int i = 0; i < hd / 2; ++i) {
      const double want = std::pow(static_cast<double>(spec.rope_base), -2.0 * i / hd) / divisors[i];
      EXPECT_NEAR(inv[i], want, 1e-6 * want) << scaling << " " << i;
    }
    std::filesystem::remove(path);
  }
}

TEST(ModelReferenceTest, GeneratedQwen2WithYarnMatchesDoubleReference) {
  SyntheticSpec spec;
  spec.arch = "qwen2";
  spec.n_vocab = 300, spec.n_embd = 128, spec.n_layer = 2, spec.n_head = 4, spec.n_head_kv = 2, spec.n_ff = 96;
  spec.n_ctx = 2048, spec.rope_scaling = "yarn", spec.strong_layers = true, spec.seed = 3;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_yarn.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  std::vector<int32_t> tokens;
  for (int i = 0; i < 64; ++i) tokens.push_back((i * 53 + 7) % 300);
  check_model(path, tokens);
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_NEAR((*model)->config().rope_attn_factor, 1.0 + 0.1 * std::log(4.0), 1e-6);
  // Heads of 32, base 10000, an original context of 512: the pair turning 32 times in
  // 512 positions is 1.62 (floor 1), the one turning once 7.65 (ceil 8). Pairs 0 and 1
  // keep their frequency, pairs from 8 are divided by 4, pair 3 mixes 5/7 and 2/7.
  const std::vector<float>& inv = (*model)->rope_inv_freq(false);
  ASSERT_EQ(inv.size(), 16u);
  auto plain = [](int i) { return std::pow(10000.0, -2.0 * i / 32); };
  EXPECT_NEAR(inv[0], plain(0), 1e-6);
  EXPECT_NEAR(inv[1], plain(1), 1e-6 * plain(1));
  EXPECT_NEAR(inv[3], plain(3) * (2.0 / 7 / 4 + 5.0 / 7), 1e-6 * plain(3));
  for (int i = 8; i < 16; ++i) EXPECT_NEAR(inv[i], plain(i) / 4, 1e-6 * plain(i)) << i;
  std::filesystem::remove(path);
}

TEST(ModelReferenceTest, GeneratedGemma2MatchesDoubleReference) {
  SyntheticSpec spec;
  spec.arch = "gemma2";
  spec.n_vocab = 300, spec.n_embd = 128, spec.n_layer = 2, spec.n_head = 4, spec.n_head_kv = 2, spec.n_ff = 192;
  spec.head_dim = 48, spec.n_ctx = 64, spec.tied_output = true, spec.seed = 21;
  // Caps low enough for these small scores and logits to reach them.
  spec.attn_softcap = 0.3f, spec.final_softcap = 1.0f;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_gemma2.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->config().attn_softcap, 0.3f);
  EXPECT_EQ((*model)->config().max_positions(), 0);  // the window (64) is the whole context
  check_model(path, {1, 5, 77, 299, 8, 100, 42, 42, 3, 17, 250, 6, 9, 9, 31, 44, 45, 46, 47, 48});
  // With Gemma-2's context (8192) and window (4096), the window is computed on the
  // local layers: sequences may run past it.
  spec.n_ctx = 8192;
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto windowed = Model::load(path);
  ASSERT_TRUE(windowed.ok()) << windowed.status().to_string();
  EXPECT_EQ((*windowed)->config().sliding_window, 4096);
  EXPECT_EQ((*windowed)->config().max_positions(), 0);
  EXPECT_EQ((*windowed)->config().window_of(0), 4096);
  EXPECT_EQ((*windowed)->config().window_of(1), 0);
  // A window of 6 on a 20-token sequence: layer 0 attends locally, layer 1 globally
  // (check_model's blocks of 16 put the window across a block boundary).
  spec.n_ctx = 64, spec.sliding_window = 6;
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  check_model(path, {1, 5, 77, 299, 8, 100, 42, 42, 3, 17, 250, 6, 9, 9, 31, 44, 45, 46, 47, 48});
  std::filesystem::remove(path);
}

TEST(ModelReferenceTest, Gpt2PositionsEndAtTheLearnedTable) {
  SyntheticSpec spec;
  spec.arch = "gpt2";
  spec.n_vocab = 260, spec.n_embd = 32, spec.n_layer = 1, spec.n_head = 2, spec.n_head_kv = 2, spec.n_ff = 64;
  spec.n_ctx = 16;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_gpt2_ctx.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->config().max_positions(), 16);
  KvCache kv((*model)->kv_config(4, kMinKvBlockSize, DType::kF32, DType::kF32));
  const std::vector<int32_t> table = {0, 1, 2, 3};
  const std::vector<int32_t> tokens(17, 5);
  ForwardState state;
  ThreadPool pool(1);
  ForwardOutput out;
  SequenceChunk fits{std::span<const int32_t>(tokens).first(16), 0, table, LogitsWanted::kLast};
  EXPECT_TRUE((*model)->forward({&fits, 1}, kv, state, pool, out).ok());
  SequenceChunk past{std::span<const int32_t>(tokens).first(1), 16, table, LogitsWanted::kLast};
  const Status st = (*model)->forward({&past, 1}, kv, state, pool, out);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("learned positions"), std::string::npos) << st.message();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace llms
