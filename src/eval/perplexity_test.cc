#include "eval/perplexity.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "io/gguf_writer.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

// A LLaMA model whose output head is all zeros: every distribution is uniform, so the
// perplexity is exactly the vocabulary size whatever the text.
std::string write_uniform_model(int vocab) {
  const int d = 8, ff = 16;
  GgufWriter w;
  w.set("general.architecture", gguf::Value::string("llama"));
  w.set("llama.embedding_length", gguf::Value::u32(d));
  w.set("llama.block_count", gguf::Value::u32(1));
  w.set("llama.feed_forward_length", gguf::Value::u32(ff));
  w.set("llama.attention.head_count", gguf::Value::u32(2));
  w.set("llama.context_length", gguf::Value::u32(64));
  static std::vector<uint8_t> ones, zeros;
  std::vector<float> one(static_cast<size_t>(vocab * ff), 1.0f);
  ones.resize(one.size() * 4);
  std::memcpy(ones.data(), one.data(), ones.size());
  zeros.assign(static_cast<size_t>(vocab * ff) * 4, 0);
  auto span = [](const std::vector<uint8_t>& v, int64_t n) { return std::span<const uint8_t>(v.data(), static_cast<size_t>(n) * 4); };
  w.add_tensor("token_embd.weight", DType::kF32, {d, vocab}, span(ones, d * vocab));
  w.add_tensor("output_norm.weight", DType::kF32, {d}, span(ones, d));
  w.add_tensor("output.weight", DType::kF32, {d, vocab}, span(zeros, d * vocab));
  w.add_tensor("blk.0.attn_norm.weight", DType::kF32, {d}, span(ones, d));
  w.add_tensor("blk.0.ffn_norm.weight", DType::kF32, {d}, span(ones, d));
  for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
    w.add_tensor(std::string("blk.0.") + m + ".weight", DType::kF32, {d, d}, span(ones, d * d));
  }
  w.add_tensor("blk.0.ffn_gate.weight", DType::kF32, {d, ff}, span(ones, d * ff));
  w.add_tensor("blk.0.ffn_up.weight", DType::kF32, {d, ff}, span(ones, d * ff));
  w.add_tensor("blk.0.ffn_down.weight", DType::kF32, {ff, d}, span(ones, d * ff));
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_uniform.gguf";
  EXPECT_TRUE(w.write(path).ok());
  return path;
}

TEST(PerplexityTest, UniformModelHasPerplexityEqualToVocabulary) {
  const std::string path = write_uniform_model(100);
  auto m = Model::load(path).value();
  std::vector<int32_t> tokens;
  for (int i = 0; i < 50; ++i) tokens.push_back((i * 13) % 100);
  ThreadPool pool(1);
  PerplexityOptions opts;
  opts.ctx = 16;
  auto r = evaluate_perplexity(tokens, {m.get()}, {}, opts, pool);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_NEAR(r->perplexity, 100.0, 1e-9);
  // Windows of 16 over 50 tokens: 16 + 16 + 16 + 2 tokens, each scoring all but its first.
  EXPECT_EQ(r->windows, 4);
  EXPECT_EQ(r->scored_tokens, 15 + 15 + 15 + 1);
  std::filesystem::remove(path);
}

TEST(PerplexityTest, ModelAgainstItselfHasNoDivergence) {
  SyntheticSpec spec = synthetic_preset("tiny").value();
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_ppl_self.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto m = Model::load(path).value();
  std::vector<int32_t> tokens;
  for (int i = 0; i < 100; ++i) tokens.push_back(3 + (i * 7) % 400);
  ThreadPool pool(1);
  auto r = evaluate_perplexity(tokens, {m.get()}, {m.get()}, {32, 0}, pool);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->perplexity, r->base_perplexity);
  EXPECT_NEAR(r->kl_divergence, 0.0, 1e-12);
  EXPECT_EQ(r->top1_agreement, 1.0);
  // A lower-precision KV cache of the same model diverges, a little.
  auto q = evaluate_perplexity(tokens, {m.get(), DType::kBF16, DType::kBF16}, {m.get()}, {32, 0}, pool);
  ASSERT_TRUE(q.ok());
  EXPECT_GT(q->kl_divergence, 0.0);
  EXPECT_LT(q->kl_divergence, 0.01);
  std::filesystem::remove(path);
}

// A recorded reference stands in for the model that made it: the same run against it
// diverges by nothing, and a coarser KV cache diverges more than a finer one, the same
// as when both models run side by side.
TEST(PerplexityTest, RecordedReferenceMatchesTheLiveComparison) {
  SyntheticSpec spec = synthetic_preset("tiny").value();
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_ppl_ref.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto m = Model::load(path).value();
  std::vector<int32_t> tokens;
  for (int i = 0; i < 70; ++i) tokens.push_back(3 + (i * 11) % 400);
  ThreadPool pool(1);
  const PerplexityOptions opts{32, 0};
  auto ref = record_logprobs(tokens, {m.get()}, opts, pool);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  EXPECT_EQ(ref->windows, 3);
  EXPECT_EQ(ref->logprobs.size(), static_cast<size_t>((31 + 31 + 5) * m->config().n_vocab));
  auto same = evaluate_against(*ref, {m.get()}, pool);
  ASSERT_TRUE(same.ok());
  EXPECT_NEAR(same->kl_divergence, 0.0, 1e-6);
  EXPECT_EQ(same->top1_agreement, 1.0);
  for (DType kv : {DType::kF16, DType::kQ4_0}) {
    auto live = evaluate_perplexity(tokens, {m.get(), kv, kv}, {m.get()}, opts, pool);
    auto recorded = evaluate_against(*ref, {m.get(), kv, kv}, pool);
    ASSERT_TRUE(live.ok() && recorded.ok());
    // The reference holds float log-probabilities (the live base has doubles).
    EXPECT_NEAR(recorded->kl_divergence, live->kl_divergence, 1e-6 + 1e-3 * live->kl_divergence) << dtype_name(kv);
    EXPECT_EQ(recorded->perplexity, live->perplexity) << dtype_name(kv);
  }
  auto f16 = evaluate_against(*ref, {m.get(), DType::kF16, DType::kF16}, pool);
  auto q4 = evaluate_against(*ref, {m.get(), DType::kQ4_0, DType::kQ4_0}, pool);
  EXPECT_GT(q4->kl_divergence, f16->kl_divergence);
  std::filesystem::remove(path);
}

TEST(PerplexityTest, BadInputsAreClearErrors) {
  SyntheticSpec spec = synthetic_preset("tiny").value();
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_ppl_bad.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto m = Model::load(path).value();
  ThreadPool pool(1);
  const std::vector<int32_t> one = {5};
  EXPECT_EQ(evaluate_perplexity(one, {m.get()}, {}, {32, 0}, pool).status().code(), StatusCode::kInvalidArgument);
  const std::vector<int32_t> two = {5, 6};
  EXPECT_EQ(evaluate_perplexity(two, {m.get()}, {}, {1, 0}, pool).status().code(), StatusCode::kInvalidArgument);
  const std::string uniform = write_uniform_model(100);
  auto u = Model::load(uniform).value();
  EXPECT_NE(evaluate_perplexity(two, {m.get()}, {u.get()}, {32, 0}, pool).status().message().find("vocabulary"),
            std::string::npos);
  std::filesystem::remove(path);
  std::filesystem::remove(uniform);
}

}  // namespace
}  // namespace llms
