// LoRA adapters bound to a model: both file forms give the same adapter, the pass
// applies y = W x + scale * B (A x) (checked against the merged weights), a batch
// that mixes adapters and the base gives each sequence its logits alone, and what
// does not fit the base is a clear error.
#include "model/lora.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "dist/thread_group.h"
#include "io/gguf_writer.h"
#include "model/model.h"
#include "quant/half.h"
#include "tools/synthetic.h"
#include "tools/synthetic_lora.h"

namespace llms {
namespace {

class LoraModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ::testing::TempDir() + "/lora_model_test_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    SyntheticSpec spec = synthetic_preset("tiny").value();
    ASSERT_TRUE(write_synthetic_model(spec, dir_ + "/base.gguf").ok());
    auto m = Model::load(dir_ + "/base.gguf");
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    model_ = m->release();
  }
  static void TearDownTestSuite() {
    delete model_;
    std::filesystem::remove_all(dir_);
  }

  // A generated adapter (seed `seed`) written in `format` and loaded.
  static std::unique_ptr<LoraAdapter> adapter(uint64_t seed, const std::string& format, DType type = DType::kF32) {
    SyntheticLoraSpec spec;
    spec.rank = 8, spec.alpha = 16, spec.std_dev = 0.1f, spec.seed = seed;
    const LoraFile file = make_synthetic_lora(model_->file(), spec).value();
    const std::string path = dir_ + "/lora_" + std::to_string(seed) + "_" + format;
    EXPECT_TRUE((format == "peft" ? write_lora_peft(file, model_->file(), type, path) : write_lora_gguf(file, type, path)).ok());
    auto a = LoraAdapter::load(path, *model_);
    EXPECT_TRUE(a.ok()) << a.status().to_string();
    return a.ok() ? std::move(*a) : nullptr;
  }

  // Logits of every position of `tokens`, one pass, with `a` (or none).
  static std::vector<float> logits(const std::vector<int32_t>& tokens, const LoraAdapter* a) {
    const int block = 16;
    const int32_t n_blocks = static_cast<int32_t>((tokens.size() + block - 1) / block);
    KvCache kv(model_->kv_config(n_blocks, block, DType::kF32, DType::kF32));
    std::vector<int32_t> table(static_cast<size_t>(n_blocks));
    for (int32_t b = 0; b < n_blocks; ++b) table[static_cast<size_t>(b)] = b;
    ForwardState state;
    ThreadPool pool(2);
    ForwardOutput out;
    SequenceChunk c{tokens, 0, table, LogitsWanted::kAll};
    c.adapter = a;
    EXPECT_TRUE(model_->forward({&c, 1}, kv, state, pool, out).ok());
    return out.logits;
  }

  static std::string dir_;
  static Model* model_;
};

std::string LoraModelTest::dir_;
Model* LoraModelTest::model_ = nullptr;

const std::vector<int32_t> kPrompt = {1, 50, 300, 7, 99, 410, 12, 5, 260, 33, 18, 77, 480, 2, 64, 9, 150, 3};

TEST_F(LoraModelTest, PeftDirectoryEqualsGgufAdapter) {
  for (DType type : {DType::kF32, DType::kF16}) {
    auto g = adapter(3, "gguf", type), p = adapter(3, "peft", type);
    ASSERT_TRUE(g && p);
    EXPECT_EQ(g->identity(), p->identity()) << dtype_name(type);
    EXPECT_EQ(g->num_matrices(), 2 * 7);
    EXPECT_EQ(logits(kPrompt, g.get()), logits(kPrompt, p.get())) << dtype_name(type);
  }
}

// Factors F16 holds exactly are kept in F16, half the bytes, whatever the file's type:
// an F32 file of F16 values is the F16 file's adapter (identity, logits); an F32 file
// of other values stays F32.
TEST_F(LoraModelTest, FactorsF16HoldsExactlyAreKeptInF16) {
  SyntheticLoraSpec spec;
  spec.rank = 8, spec.alpha = 16, spec.std_dev = 0.1f, spec.seed = 7;
  LoraFile file = make_synthetic_lora(model_->file(), spec).value();
  ASSERT_TRUE(write_lora_gguf(file, DType::kF32, dir_ + "/f32.gguf").ok());
  ASSERT_TRUE(write_lora_gguf(file, DType::kF16, dir_ + "/f16.gguf").ok());
  for (LoraMatrix& m : file.matrices) {
    for (auto* v : {&m.a, &m.b}) {
      for (float& x : *v) x = f16_to_f32(f32_to_f16(x));
    }
  }
  ASSERT_TRUE(write_lora_gguf(file, DType::kF32, dir_ + "/f32_of_f16.gguf").ok());
  auto f32 = LoraAdapter::load(dir_ + "/f32.gguf", *model_).value();
  auto f16 = LoraAdapter::load(dir_ + "/f16.gguf", *model_).value();
  auto f32_of_f16 = LoraAdapter::load(dir_ + "/f32_of_f16.gguf", *model_).value();
  EXPECT_EQ(f16->bytes() * 2, f32->bytes());
  EXPECT_EQ(f32_of_f16->bytes(), f16->bytes());
  EXPECT_EQ(f32_of_f16->identity(), f16->identity());
  EXPECT_NE(f32->identity(), f16->identity());
  const std::vector<float> a = logits(kPrompt, f16.get()), b = logits(kPrompt, f32_of_f16.get());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, logits(kPrompt, nullptr));
}

// The adapter's output equals the base model with W + scale * B A merged into F32
// weights (a GGUF file written here), up to the order of the sums.
TEST_F(LoraModelTest, AdapterEqualsMergedWeights) {
  SyntheticLoraSpec spec;
  spec.rank = 8, spec.alpha = 16, spec.std_dev = 0.1f, spec.seed = 5;
  const LoraFile file = make_synthetic_lora(model_->file(), spec).value();
  ASSERT_TRUE(write_lora_gguf(file, DType::kF32, dir_ + "/merge.gguf").ok());
  auto a = LoraAdapter::load(dir_ + "/merge.gguf", *model_).value();
  std::map<std::string, std::vector<float>> merged;
  for (const LoraMatrix& m : file.matrices) {
    const GgufTensorInfo* t = model_->file().find_tensor(m.target);
    ASSERT_TRUE(t != nullptr && t->dtype == DType::kF32);
    std::vector<float>& v = merged[m.target];
    v.resize(static_cast<size_t>(t->num_elements()));
    std::memcpy(v.data(), model_->file().read(*t).data(), t->num_bytes);
    const float scale = file.scale(m.rank);
    for (int64_t o = 0; o < m.rows; ++o) {
      for (int64_t c = 0; c < m.cols; ++c) {
        double d = 0;
        for (int64_t j = 0; j < m.rank; ++j) d += double(m.b[o * m.rank + j]) * m.a[j * m.cols + c];
        v[static_cast<size_t>(o * m.cols + c)] += static_cast<float>(scale * d);
      }
    }
  }
  const GgufFile& f = model_->file();
  GgufWriter w(f.alignment());
  for (const auto& [key, value] : f.metadata()) {
    if (key != "general.alignment") w.set(key, value);
  }
  for (const GgufTensorInfo& t : f.tensors()) {
    const std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    if (auto it = merged.find(t.name); it != merged.end()) {
      w.add_tensor(t.name, DType::kF32, ne,
                   std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(it->second.data()), it->second.size() * 4));
    } else {
      w.add_tensor(t.name, t.dtype, ne, [&f, &t](std::span<uint8_t> out) { f.read_into(t, out); });
    }
  }
  ASSERT_TRUE(w.write(dir_ + "/merged_model.gguf").ok());
  auto merged_model = Model::load(dir_ + "/merged_model.gguf").value();
  const std::vector<float> with = logits(kPrompt, a.get()), base = logits(kPrompt, nullptr);
  const int64_t n = static_cast<int64_t>(kPrompt.size());
  KvCache kv(merged_model->kv_config(2, 16, DType::kF32, DType::kF32));
  const std::vector<int32_t> table = {0, 1};
  ForwardState state;
  ThreadPool pool(2);
  ForwardOutput out;
  SequenceChunk c{kPrompt, 0, table, LogitsWanted::kAll};
  ASSERT_TRUE(merged_model->forward({&c, 1}, kv, state, pool, out).ok());
  double worst = 0, moved = 0;
  for (size_t i = 0; i < with.size(); ++i) {
    worst = std::max(worst, double(std::abs(with[i] - out.logits[i])));
    moved = std::max(moved, double(std::abs(with[i] - base[i])));
  }
  EXPECT_LE(worst, 1e-4) << "over " << n << " positions";
  EXPECT_GE(moved, 100 * worst + 1e-3) << "the adapter must move the logits";
}

// The adapters' products are timed as their own part of the step (StepPart::kLora),
// apart from the base's matrix products; a pass without adapters records none.
TEST_F(LoraModelTest, TheAdaptersShareOfTheStepIsProfiled) {
  auto a = adapter(11, "gguf");
  ASSERT_NE(a, nullptr);
  auto part_ns = [&](const LoraAdapter* with, StepPart part) {
    KvCache kv(model_->kv_config(2, 16, DType::kF32, DType::kF32));
    const std::vector<int32_t> table = {0, 1};
    StepProfile profile(true);
    ForwardState state;
    state.set_profile(&profile);
    ThreadPool pool(2);
    ForwardOutput out;
    SequenceChunk c{kPrompt, 0, table, LogitsWanted::kLast};
    c.adapter = with;
    EXPECT_TRUE(model_->forward({&c, 1}, kv, state, pool, out).ok());
    return profile.current()[static_cast<size_t>(part)];
  };
  EXPECT_GT(part_ns(a.get(), StepPart::kLora), 0);
  EXPECT_GT(part_ns(a.get(), StepPart::kMatmul), 0);
  EXPECT_EQ(part_ns(nullptr, StepPart::kLora), 0);
  EXPECT_GT(part_ns(nullptr, StepPart::kMatmul), 0);
  EXPECT_STREQ(step_part_name(StepPart::kLora), "lora");
}

// One pass over three sequences (adapter 1, adapter 2, the base), prefill and decode
// mixed, gives each the logits it gets alone, bit for bit.
TEST_F(LoraModelTest, MixedAdaptersInOneBatchEqualEachAlone) {
  auto a1 = adapter(21, "gguf"), a2 = adapter(22, "gguf");
  ASSERT_TRUE(a1 && a2);
  const LoraAdapter* adapters[3] = {a1.get(), a2.get(), nullptr};
  std::vector<std::vector<int32_t>> seqs = {{1, 4, 9, 16, 25, 36, 49}, {1, 8, 27, 64, 125}, {1, 2, 3, 5, 8, 13, 21, 34}};
  std::vector<std::vector<float>> alone;
  for (size_t i = 0; i < 3; ++i) alone.push_back(logits(seqs[i], adapters[i]));
  EXPECT_NE(alone[0], logits(seqs[0], nullptr));
  // Batched: the first 4 tokens of each as prefill chunks in one pass, then the rest
  // one decode token per sequence per pass.
  KvCache kv(model_->kv_config(3, 16, DType::kF32, DType::kF32));
  std::vector<std::vector<int32_t>> tables = {{0}, {1}, {2}};
  ForwardState state;
  ThreadPool pool(3);
  ForwardOutput out;
  std::vector<size_t> done(3, 0);
  for (int pass = 0; pass < 6; ++pass) {
    std::vector<SequenceChunk> chunks;
    std::vector<size_t> which;
    for (size_t i = 0; i < 3; ++i) {
      const size_t n = pass == 0 ? 4 : 1;
      if (done[i] + n > seqs[i].size()) continue;
      SequenceChunk c{std::span(seqs[i]).subspan(done[i], n), static_cast<int64_t>(done[i]), tables[i], LogitsWanted::kAll};
      c.adapter = adapters[i];
      chunks.push_back(c);
      which.push_back(i);
    }
    ASSERT_TRUE(model_->forward(chunks, kv, state, pool, out).ok());
    for (size_t k = 0; k < chunks.size(); ++k) {
      const size_t i = which[k];
      for (size_t t = 0; t < chunks[k].tokens.size(); ++t) {
        const float* row = out.row(out.first_row[k] + static_cast<int64_t>(t));
        const float* want = alone[i].data() + (done[i] + t) * static_cast<size_t>(out.n_vocab);
        ASSERT_EQ(std::memcmp(row, want, static_cast<size_t>(out.n_vocab) * 4), 0) << "seq " << i << " pos " << done[i] + t;
      }
      done[i] += chunks[k].tokens.size();
    }
  }
}

// Writes `file` as GGUF and returns the error of loading it.
std::string load_error(const LoraFile& file, const Model& m, const std::string& path) {
  EXPECT_TRUE(write_lora_gguf(file, DType::kF32, path).ok());
  auto a = LoraAdapter::load(path, m);
  return a.ok() ? "loaded" : a.status().to_string();
}

TEST_F(LoraModelTest, WhatDoesNotFitTheBaseIsAClearError) {
  SyntheticLoraSpec spec;
  spec.rank = 4;
  const LoraFile good = make_synthetic_lora(model_->file(), spec).value();
  const std::string path = dir_ + "/bad.gguf";
  LoraFile f = good;
  f.arch = "gpt2";
  EXPECT_NE(load_error(f, *model_, path).find("architecture 'gpt2'"), std::string::npos) << load_error(f, *model_, path);
  f = good;
  f.matrices[0].target = "token_embd.weight";
  EXPECT_NE(load_error(f, *model_, path).find("not a weight an adapter can adapt"), std::string::npos);
  f = good;
  f.matrices[0].target = "blk.9.attn_q.weight";
  EXPECT_NE(load_error(f, *model_, path).find("not a weight an adapter can adapt"), std::string::npos);
  f = good;  // attn_q's factors on attn_k: 64 outputs against the base's 32
  f.matrices[0].target = "blk.0.attn_k.weight";
  f.matrices[1].target = "blk.0.attn_q.weight";
  EXPECT_NE(load_error(f, *model_, path).find("the base matrix"), std::string::npos) << load_error(f, *model_, path);
  f = good;  // B of rank 3 with A of rank 4
  f.matrices[0].b.resize(static_cast<size_t>(f.matrices[0].rows * 3));
  {
    GgufWriter w;
    w.set("general.architecture", gguf::Value::string("llama"));
    w.set("general.type", gguf::Value::string("adapter"));
    w.set("adapter.type", gguf::Value::string("lora"));
    const LoraMatrix& m = f.matrices[0];
    w.add_tensor(m.target + ".lora_a", DType::kF32, {m.cols, 4},
                 std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(m.a.data()), m.a.size() * 4));
    w.add_tensor(m.target + ".lora_b", DType::kF32, {3, m.rows},
                 std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(m.b.data()), m.b.size() * 4));
    ASSERT_TRUE(w.write(path).ok());
    auto a = LoraAdapter::load(path, *model_);
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.status().to_string().find("lora_a has rank 4 (ne [64, 4]) but lora_b 3"), std::string::npos)
        << a.status().to_string();
  }
  // A model is not an adapter.
  auto not_adapter = LoraAdapter::load(dir_ + "/base.gguf", *model_);
  ASSERT_FALSE(not_adapter.ok());
  EXPECT_NE(not_adapter.status().to_string().find("general.type"), std::string::npos) << not_adapter.status().to_string();
}

TEST_F(LoraModelTest, AnAdapterUnderTensorParallelismIsRefused) {
  // A rank holds a share of each weight; the adapter's factors are whole.
  const auto a = adapter(21, "gguf");
  ASSERT_NE(a, nullptr);
  ThreadGroup group(2);
  std::vector<Status> got(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      auto part = Model::load(dir_ + "/base.gguf", &group.member(r), {.tensor = 2});
      ASSERT_TRUE(part.ok()) << part.status().to_string();
      if (r != 0) return;  // rank 0 validates the pass before any collective
      const std::vector<int32_t> table = {0, 1};
      KvCache kv((*part)->kv_config(2, 16, DType::kF32, DType::kF32));
      ForwardState state;
      ThreadPool pool(1);
      ForwardOutput out;
      SequenceChunk c{kPrompt, 0, table, LogitsWanted::kAll};
      c.adapter = a.get();
      got[0] = (*part)->forward({&c, 1}, kv, state, pool, out);
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_EQ(got[0].code(), StatusCode::kUnimplemented) << got[0].to_string();
  EXPECT_NE(got[0].message().find("not applied under tensor or pipeline parallelism"), std::string::npos) << got[0].to_string();
}

}  // namespace
}  // namespace llms
