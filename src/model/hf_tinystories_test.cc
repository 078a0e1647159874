// The real TinyStories-656K Hugging Face directory (../shared/models/tinystories-656k/hf)
// against the Q8_0 GGUF that llama.cpp's converter made from it: the same
// hyperparameters, every tensor within Q8_0's rounding of ours under the same name
// (Q and K in llama.cpp's rotary row order, which the HF order is not), and llama.cpp's
// greedy story.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "io/hf_model.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "quant/row_convert.h"
#include "tokenizer/tokenizer.h"

namespace llms {
namespace {

const std::string kDir = std::string(LLMSERVE_SHARED_DIR) + "/models/tinystories-656k";

bool have_files() {
  return std::filesystem::exists(kDir + "/hf/model.safetensors") &&
         std::filesystem::exists(kDir + "/TinyStories-656K-Q8_0.gguf");
}

std::vector<float> as_floats(const GgufFile& f, const GgufTensorInfo& t) {
  const TensorData d = f.read(t);
  std::vector<float> v(static_cast<size_t>(t.num_elements()));
  const int64_t cols = t.ne[0];
  for (int64_t r = 0; r < t.num_elements() / cols; ++r) {
    dequantize_row(t.dtype, d.view().row(r), v.data() + r * cols, cols);
  }
  return v;
}

// Rows of `ours` (F32) whose Q8_0 rounding `theirs` is not within Q8_0's error: each
// value within 0.57 of its 32-block's scale amax / 127 (half a step, plus the
// scale's own F16 rounding times 127).
int rows_off(const std::vector<float>& ours, const std::vector<float>& theirs, int64_t cols) {
  int off = 0;
  for (size_t r = 0; r * cols < ours.size(); ++r) {
    bool bad = false;
    for (int64_t b = 0; b < cols; b += 32) {
      float amax = 0;
      for (int64_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(ours[r * cols + i]));
      const float bound = 0.57f * amax / 127.0f + 1e-7f;
      for (int64_t i = b; i < b + 32; ++i) bad = bad || std::fabs(ours[r * cols + i] - theirs[r * cols + i]) > bound;
    }
    off += bad;
  }
  return off;
}

TEST(HfTinyStoriesTest, HyperparametersMatchLlamaCppConversion) {
  if (!have_files()) GTEST_SKIP() << "needs " << kDir;
  auto ours = Model::load(kDir + "/hf");
  ASSERT_TRUE(ours.ok()) << ours.status().to_string();
  auto theirs = Model::load(kDir + "/TinyStories-656K-Q8_0.gguf");
  ASSERT_TRUE(theirs.ok()) << theirs.status().to_string();
  const ModelConfig& a = (*ours)->config();
  const ModelConfig& b = (*theirs)->config();
  EXPECT_EQ(a.arch_name, "llama");
  EXPECT_EQ(a.n_vocab, b.n_vocab);
  EXPECT_EQ(a.n_embd, b.n_embd);
  EXPECT_EQ(a.n_layer, b.n_layer);
  EXPECT_EQ(a.n_head, b.n_head);
  EXPECT_EQ(a.n_head_kv, b.n_head_kv);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.n_ff, b.n_ff);
  EXPECT_EQ(a.n_ctx_train, b.n_ctx_train);
  EXPECT_EQ(a.rope_dim, b.rope_dim);
  EXPECT_EQ(a.rope_base, b.rope_base);
  EXPECT_EQ(a.rms_eps, b.rms_eps);
  EXPECT_EQ(a.rope_style, b.rope_style);
  EXPECT_TRUE((*ours)->weights().tied_output);
  EXPECT_EQ((*ours)->weights().tied_output, (*theirs)->weights().tied_output);
}

TEST(HfTinyStoriesTest, EveryTensorMatchesLlamaCppQ8RowsInTheirOrder) {
  if (!have_files()) GTEST_SKIP() << "needs " << kDir;
  auto dir = open_hf_model(kDir + "/hf");
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  auto q8 = GgufFile::open(kDir + "/TinyStories-656K-Q8_0.gguf");
  ASSERT_TRUE(q8.ok());
  ASSERT_EQ(dir->tensors().size(), q8->tensors().size());
  for (const auto& t : q8->tensors()) {
    SCOPED_TRACE(t.name);
    const GgufTensorInfo* mine = dir->find_tensor(t.name);
    ASSERT_NE(mine, nullptr);
    ASSERT_EQ(mine->n_dims, t.n_dims);
    ASSERT_EQ(mine->ne, t.ne);
    const std::vector<float> ours = as_floats(*dir, *mine), theirs = as_floats(*q8, t);
    if (t.dtype == DType::kF32) {
      EXPECT_EQ(ours, theirs);  // the norms: F32 both
      continue;
    }
    ASSERT_EQ(t.dtype, DType::kQ8_0);
    EXPECT_EQ(rows_off(ours, theirs, t.ne[0]), 0);
  }
}

TEST(HfTinyStoriesTest, QueryAndKeyRowsAreNotInTheDirectorysOrder) {
  // The check above would pass for any row order if Q8_0's error were loose: the
  // directory's own (unpermuted) order must fail it.
  if (!have_files()) GTEST_SKIP() << "needs " << kDir;
  auto dir = open_hf_model(kDir + "/hf");
  ASSERT_TRUE(dir.ok());
  auto q8 = GgufFile::open(kDir + "/TinyStories-656K-Q8_0.gguf");
  ASSERT_TRUE(q8.ok());
  auto raw = SafetensorsFile::open(kDir + "/hf/model.safetensors");
  ASSERT_TRUE(raw.ok());
  for (const char* part : {"q", "k"}) {
    const GgufTensorInfo* t = q8->find_tensor(std::string("blk.0.attn_") + part + ".weight");
    const SafetensorsTensor* s = raw->find(std::string("model.layers.0.self_attn.") + part + "_proj.weight");
    ASSERT_NE(t, nullptr);
    ASSERT_NE(s, nullptr);
    std::vector<float> hf_order(static_cast<size_t>(s->num_elements()));
    std::memcpy(hf_order.data(), s->data, s->num_bytes);
    EXPECT_GT(rows_off(hf_order, as_floats(*q8, *t), t->ne[0]), t->ne[1] / 2) << part;
  }
}

TEST(HfTinyStoriesTest, GreedyStoryIsTheReferenceOne) {
  if (!have_files()) GTEST_SKIP() << "needs " << kDir;
  auto model = Model::load(kDir + "/hf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  // The vocabulary of llama.cpp's conversion (the directory's tokenizer.json is read by
  // the tokenizer; the ids are the same).
  auto vocab = GgufFile::open(kDir + "/TinyStories-656K-Q8_0.gguf");
  ASSERT_TRUE(vocab.ok());
  auto tok = Tokenizer::from_gguf(*vocab);
  ASSERT_TRUE(tok.ok());
  std::vector<int32_t> tokens = (*tok)->encode("Once upon a time");  // BOS first
  ASSERT_EQ(tokens.front(), 1);
  const size_t prompt = tokens.size();
  const Model& m = **model;
  KvCache kv(m.kv_config(8, 16, DType::kF32, DType::kF32));
  std::vector<int32_t> table = {0, 1, 2, 3, 4, 5, 6, 7};
  ForwardState state;
  ThreadPool pool(2);
  ForwardOutput out;
  size_t fed = 0;
  while (tokens.size() < prompt + 32) {
    SequenceChunk c{std::span<const int32_t>(tokens).subspan(fed), static_cast<int64_t>(fed), table, LogitsWanted::kLast};
    ASSERT_TRUE(m.forward({&c, 1}, kv, state, pool, out).ok());
    fed = tokens.size();
    const float* row = out.row(0);
    tokens.push_back(static_cast<int32_t>(std::max_element(row, row + out.n_vocab) - row));
  }
  const std::string text = (*tok)->decode(std::span<const int32_t>(tokens).subspan(prompt));
  // llama.cpp's greedy text on the F32 GGUF of this directory (scripts/hf-reference.sh;
  // SOURCES.txt's story is the Q8_0 file's, which parts from it at "mom").
  EXPECT_EQ(text.rfind(", a little girl named Lily lived in a small house with her mom, dad, and her dog, Spot, Spot, "
                       "loved to play all day.", 0), 0u) << text;
}

}  // namespace
}  // namespace llms
