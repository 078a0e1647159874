// quantize --lora: a generated adapter merged into a generated base and written in F32
// gives the logits the base gives with the adapter served beside it, within what float
// rounding allows; a PEFT directory merges as its GGUF twin; what does not fit the
// base is a clear error.
#include "tools/lora_merge.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "model/lora.h"
#include "model/model.h"
#include "tools/quantizer.h"
#include "tools/synthetic.h"
#include "tools/synthetic_lora.h"

namespace llms {
namespace {

const std::vector<int32_t> kPrompt = {1, 50, 300, 7, 99, 410, 12, 5, 260, 33, 18, 77, 480, 2, 64, 9, 150, 3};

class LoraMergeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(::testing::TempDir() + "/lora_merge_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(*dir_);
    ASSERT_TRUE(write_synthetic_model(synthetic_preset("tiny").value(), *dir_ + "/base.gguf").ok());
    const GgufFile base = GgufFile::open(*dir_ + "/base.gguf").value();
    SyntheticLoraSpec spec;
    spec.rank = 8, spec.alpha = 16, spec.std_dev = 0.1f, spec.seed = 21;
    const LoraFile file = make_synthetic_lora(base, spec).value();
    ASSERT_TRUE(write_lora_gguf(file, DType::kF32, *dir_ + "/a.gguf").ok());
    ASSERT_TRUE(write_lora_peft(file, base, DType::kF32, *dir_ + "/a_peft").ok());
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }

  // `adapter` merged into the base at `scale`, written as `type`.
  static std::string merge(const std::string& adapter, float scale, DType type, const std::string& out) {
    const GgufFile base = GgufFile::open(*dir_ + "/base.gguf").value();
    auto m = LoraMerge::prepare(*dir_ + "/" + adapter, base, scale);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    QuantizeOptions q;
    q.type = type;
    q.lora = &*m;
    const std::string path = *dir_ + "/" + out;
    auto r = quantize_model(*dir_ + "/base.gguf", path, q);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return path;
  }

  // Logits of every position of kPrompt, one pass, with `adapter` (or none).
  static std::vector<float> logits(const Model& model, const LoraAdapter* adapter) {
    KvCache kv(model.kv_config(2, 16, DType::kF32, DType::kF32));
    const std::vector<int32_t> table = {0, 1};
    ForwardState state;
    ThreadPool pool(2);
    ForwardOutput out;
    SequenceChunk c{kPrompt, 0, table, LogitsWanted::kAll};
    c.adapter = adapter;
    EXPECT_TRUE(model.forward({&c, 1}, kv, state, pool, out).ok());
    return out.logits;
  }

  static double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double worst = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])));
    return worst;
  }

  static std::string* dir_;
};

std::string* LoraMergeTest::dir_ = nullptr;

TEST_F(LoraMergeTest, MergedF32ModelEqualsBasePlusAdapter) {
  auto base = Model::load(*dir_ + "/base.gguf").value();
  auto adapter = LoraAdapter::load(*dir_ + "/a.gguf", *base).value();
  auto merged = Model::load(merge("a.gguf", 1.0f, DType::kF32, "merged.gguf")).value();
  const std::vector<float> served = logits(*base, adapter.get()), alone = logits(*merged, nullptr);
  const std::vector<float> plain = logits(*base, nullptr);
  double max_logit = 0;
  for (float v : served) max_logit = std::max(max_logit, double(std::abs(v)));
  // The tolerance, from float rounding. Both paths compute the same products in
  // exact arithmetic: serving sums W x and s B (A x), the merged model W' x with
  // W' = W + s B A rounded once to F32 (the product summed in double). A float dot
  // product of n terms is off by at most gamma_n = n u / (1 - n u) times the sum of
  // its terms' magnitudes (u = 2^-24), so one product's outputs differ between the
  // paths by at most about 2 (n + rank) u of that scale (each path's sums, plus W's
  // one rounding), n the longest row (n_ff, ffn_down's). The residual stream carries
  // such relative differences from each of the 2 n_layer blocks and the output head,
  // adding up (the norms rescale but do not amplify them), so the logits may differ
  // by about 2 (n_ff + rank) u (2 n_layer + 1) max|logit|. The bound is a worst case
  // (rounding errors grow like sqrt(n) in practice), so no further margin is added.
  const ModelConfig& c = base->config();
  const double u = std::ldexp(1.0, -24);
  const double tolerance = 2.0 * static_cast<double>(c.n_ff + 8) * u * (2.0 * c.n_layer + 1) * max_logit;
  const double diff = max_abs_diff(served, alone);
  EXPECT_LE(diff, tolerance) << "max |logit| " << max_logit;
  // The adapter matters at this tolerance: without it, or with a scale 1% off, the
  // logits are far outside it.
  EXPECT_GT(max_abs_diff(served, plain), 100 * tolerance);
  auto off = Model::load(merge("a.gguf", 1.01f, DType::kF32, "merged_off.gguf")).value();
  EXPECT_GT(max_abs_diff(served, logits(*off, nullptr)), 10 * tolerance);
  // The scale the server would use with --lora-scaled: the same merge at 0.5.
  auto half_adapter = LoraAdapter::load(*dir_ + "/a.gguf", *base, 0.5f).value();
  auto half = Model::load(merge("a.gguf", 0.5f, DType::kF32, "merged_half.gguf")).value();
  EXPECT_LE(max_abs_diff(logits(*base, half_adapter.get()), logits(*half, nullptr)), tolerance);
  std::printf("merged vs served: max |diff| %.3g, tolerance %.3g, max |logit| %.3g\n", diff, tolerance, max_logit);
}

TEST_F(LoraMergeTest, PeftDirectoryMergesAsItsGgufTwinAndQuantizes) {
  auto g = Model::load(merge("a.gguf", 1.0f, DType::kF32, "g.gguf")).value();
  auto p = Model::load(merge("a_peft", 1.0f, DType::kF32, "p.gguf")).value();
  EXPECT_EQ(max_abs_diff(logits(*g, nullptr), logits(*p, nullptr)), 0.0);  // the same factors, the same sums
  // Quantized as quantize does: Q8_0 of the merged weights, recorded in the metadata.
  const std::string q8 = merge("a.gguf", 1.0f, DType::kQ8_0, "q8.gguf");
  const GgufFile f = GgufFile::open(q8).value();
  EXPECT_EQ(f.find_tensor("blk.0.attn_q.weight")->dtype, DType::kQ8_0);
  const auto lora = f.get_string_or("llmserve.quantize.lora", "");
  ASSERT_TRUE(lora.ok());
  EXPECT_NE(lora->find("a.gguf"), std::string::npos) << *lora;
  EXPECT_TRUE(Model::load(q8).ok());
}

TEST_F(LoraMergeTest, WhatDoesNotFitTheBaseIsAClearError) {
  SyntheticSpec other = synthetic_preset("tiny").value();
  other.n_embd = 96, other.n_ff = 256;
  ASSERT_TRUE(write_synthetic_model(other, *dir_ + "/other.gguf").ok());
  const GgufFile base = GgufFile::open(*dir_ + "/other.gguf").value();
  auto m = LoraMerge::prepare(*dir_ + "/a.gguf", base, 1.0f);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("blk.0."), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find("the base's is"), std::string::npos) << m.status().message();
  const GgufFile tiny = GgufFile::open(*dir_ + "/base.gguf").value();
  EXPECT_FALSE(LoraMerge::prepare(*dir_ + "/missing.gguf", tiny, 1.0f).ok());
  EXPECT_FALSE(LoraMerge::prepare(*dir_ + "/a.gguf", tiny, std::nanf("")).ok());
}

}  // namespace
}  // namespace llms
