// A batch that mixes prefill chunks and decodes of different sequences gives, for each
// sequence, the logits it gets when run alone: bit-identical with F32 KV.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "model/model.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

struct Seq {
  std::vector<int32_t> tokens;
  std::vector<int32_t> table;
};

// Logits at every position of `s`, computed alone in chunks of `chunk` tokens.
std::vector<std::vector<float>> alone(const Model& m, KvCache& kv, const Seq& s, size_t chunk) {
  ForwardState state;
  ThreadPool pool(2);
  ForwardOutput out;
  std::vector<std::vector<float>> rows;
  for (size_t at = 0; at < s.tokens.size(); at += chunk) {
    const size_t n = std::min(chunk, s.tokens.size() - at);
    SequenceChunk c{std::span(s.tokens).subspan(at, n), static_cast<int64_t>(at), s.table, LogitsWanted::kAll};
    EXPECT_TRUE(m.forward({&c, 1}, kv, state, pool, out).ok());
    for (size_t i = 0; i < n; ++i) rows.emplace_back(out.row(i), out.row(i) + out.n_vocab);
  }
  return rows;
}

void check_mixed_batches(const std::string& path, DType kv_type) {
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Model& m = **model;
  const int B = 16;
  const int vocab = m.config().n_vocab;
  // Three sequences of different lengths, each with its own blocks.
  std::vector<Seq> seqs(3);
  const size_t lengths[] = {37, 9, 60};
  int32_t next_block = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    for (size_t t = 0; t < lengths[i]; ++t) seqs[i].tokens.push_back(static_cast<int32_t>((t * 31 + i * 7 + 1) % vocab));
    for (size_t b = 0; b < (lengths[i] + B - 1) / B; ++b) seqs[i].table.push_back(next_block++);
  }
  KvCache solo_kv(m.kv_config(next_block, B, kv_type, kv_type));
  std::vector<std::vector<std::vector<float>>> expected;
  for (const auto& s : seqs) expected.push_back(alone(m, solo_kv, s, 1));

  // Batched: each step carries a different mix of prefill chunks and single decodes.
  KvCache kv(m.kv_config(next_block, B, kv_type, kv_type));
  ForwardState state;
  ThreadPool pool(2);
  ForwardOutput out;
  std::vector<size_t> done(seqs.size(), 0);
  const size_t chunk_plan[][3] = {{5, 1, 13}, {1, 3, 1}, {11, 1, 20}, {1, 4, 1}, {20, 0, 26}};
  size_t step = 0;
  while (done[0] < lengths[0] || done[1] < lengths[1] || done[2] < lengths[2]) {
    std::vector<SequenceChunk> chunks;
    std::vector<size_t> owner;
    for (size_t i = 0; i < seqs.size(); ++i) {
      const size_t want = step < 5 ? chunk_plan[step][i] : 1;
      const size_t n = std::min(want, lengths[i] - done[i]);
      if (n == 0) continue;
      chunks.push_back({std::span(seqs[i].tokens).subspan(done[i], n), static_cast<int64_t>(done[i]), seqs[i].table,
                        LogitsWanted::kAll});
      owner.push_back(i);
    }
    ASSERT_TRUE(m.forward(chunks, kv, state, pool, out).ok());
    for (size_t c = 0; c < chunks.size(); ++c) {
      const size_t i = owner[c];
      for (size_t j = 0; j < chunks[c].tokens.size(); ++j) {
        const float* got = out.row(out.first_row[c] + static_cast<int64_t>(j));
        const auto& want = expected[i][done[i] + j];
        ASSERT_EQ(std::memcmp(got, want.data(), want.size() * sizeof(float)), 0)
            << "sequence " << i << " position " << done[i] + j << " kv " << dtype_name(kv_type);
      }
      done[i] += chunks[c].tokens.size();
    }
    ++step;
  }
}

TEST(BatchEquivalenceTest, StoriesMixedBatchesAreBitIdentical) {
  const std::string path = std::string(LLMSERVE_SHARED_DIR) + "/models/stories260K.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "needs " << path;
  check_mixed_batches(path, DType::kF32);
  check_mixed_batches(path, DType::kF16);
}

TEST(BatchEquivalenceTest, GeneratedGqaModelMixedBatchesAreBitIdentical) {
  SyntheticSpec spec;
  spec.arch = "qwen2";
  spec.n_vocab = 320, spec.n_embd = 128, spec.n_layer = 2, spec.n_head = 8, spec.n_head_kv = 2, spec.n_ff = 256;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_batch_gqa.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  check_mixed_batches(path, DType::kF32);
  check_mixed_batches(path, DType::kBF16);
  std::filesystem::remove(path);
}

TEST(BatchEquivalenceTest, GeneratedGpt2MixedBatchesAreBitIdentical) {
  SyntheticSpec spec;
  spec.arch = "gpt2";
  spec.n_vocab = 320, spec.n_embd = 128, spec.n_layer = 2, spec.n_head = 4, spec.n_head_kv = 4, spec.n_ff = 512;
  spec.n_ctx = 64, spec.tied_output = true;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_batch_gpt2.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  check_mixed_batches(path, DType::kF32);
  check_mixed_batches(path, DType::kQ8_0);
  std::filesystem::remove(path);
}

TEST(BatchEquivalenceTest, GeneratedPhi3MixedBatchesAreBitIdentical) {
  SyntheticSpec spec;
  spec.arch = "phi3";
  spec.n_vocab = 320, spec.n_embd = 192, spec.n_layer = 2, spec.n_head = 2, spec.n_head_kv = 2, spec.n_ff = 256;
  spec.n_ctx = 65536;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_batch_phi3.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  check_mixed_batches(path, DType::kF32);
  check_mixed_batches(path, DType::kF16);
  std::filesystem::remove(path);
  // The 4k files' layout: a window (here 12, past which the sequences run) on every layer.
  spec.n_ctx = 4096, spec.sliding_window = 12;
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  check_mixed_batches(path, DType::kF32);
  std::filesystem::remove(path);
}

TEST(BatchEquivalenceTest, GeneratedGemma2MixedBatchesAreBitIdentical) {
  SyntheticSpec spec;
  spec.arch = "gemma2";
  spec.n_vocab = 320, spec.n_embd = 128, spec.n_layer = 2, spec.n_head = 4, spec.n_head_kv = 2, spec.n_ff = 256;
  spec.head_dim = 64, spec.n_ctx = 128, spec.tied_output = true;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_batch_gemma2.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  check_mixed_batches(path, DType::kF32);
  check_mixed_batches(path, DType::kQ8_0);
  std::filesystem::remove(path);
}

// Batches put different tokens in each expert's group (and a different count of
// them in each product): every token's output is still its solo output, bit for bit.
TEST(BatchEquivalenceTest, GeneratedMixturesOfExpertsMixedBatchesAreBitIdentical) {
  SyntheticSpec mixtral;
  mixtral.n_vocab = 320, mixtral.n_embd = 128, mixtral.n_layer = 2, mixtral.n_head = 4, mixtral.n_head_kv = 2;
  mixtral.n_ff = 128, mixtral.n_expert = 4, mixtral.n_expert_used = 2;
  SyntheticSpec qwen = mixtral;
  qwen.arch = "qwen2moe", qwen.n_expert = 8, qwen.n_expert_used = 3, qwen.n_ff_exp = 64;
  for (SyntheticSpec spec : {mixtral, qwen}) {
    for (DType weights : {DType::kF32, DType::kQ8_0}) {
      spec.weight_type = weights;
      const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_batch_moe.gguf";
      ASSERT_TRUE(write_synthetic_model(spec, path).ok());
      check_mixed_batches(path, DType::kF32);
      std::filesystem::remove(path);
    }
  }
}

}  // namespace
}  // namespace llms
