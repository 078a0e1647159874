#include "tools/quantizer.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "io/gguf_file.h"
#include "model/model.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
}

const TensorDecision& find(const QuantizeReport& r, const std::string& name) {
  for (const auto& d : r.tensors)
    if (d.name == name) return d;
  ADD_FAILURE() << "no decision for " << name;
  static TensorDecision none;
  return none;
}

TEST(QuantizerTest, KeepRulesParse) {
  auto r = parse_keep_rule("f16:attn_k,attn_v");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->type, DType::kF16);
  EXPECT_EQ(r->patterns, (std::vector<std::string>{"attn_k", "attn_v"}));
  EXPECT_FALSE(parse_keep_rule("f16").ok());
  EXPECT_FALSE(parse_keep_rule("q9_9:x").ok());
  EXPECT_FALSE(parse_keep_rule("q8_0:").ok());
}

TEST(QuantizerTest, DefaultPolicyProtectsEmbeddingsAndFitsOddRows) {
  SyntheticSpec spec = synthetic_preset("tiny").value();
  spec.n_ff = 172;  // rows of ffn_down are 172 wide: no 32- or 256-blocks fit
  const std::string in = temp("q_in.gguf"), out = temp("q_out.gguf");
  ASSERT_TRUE(write_synthetic_model(spec, in).ok());
  QuantizeOptions o;
  o.type = DType::kQ4_K;
  o.keep.push_back(parse_keep_rule("q8_0:attn_v").value());
  auto rep = quantize_model(in, out, o);
  ASSERT_TRUE(rep.ok()) << rep.status().to_string();
  // 64-wide rows: q4_k (256) does not fit; of the 4.5-bit types that do, the more precise.
  EXPECT_EQ(find(*rep, "blk.0.attn_q.weight").to, DType::kIQ4_NL);
  EXPECT_EQ(find(*rep, "blk.0.attn_v.weight").to, DType::kQ8_0);   // --keep
  EXPECT_EQ(find(*rep, "output.weight").to, DType::kQ8_0);         // protected
  EXPECT_EQ(find(*rep, "blk.1.ffn_down.weight").to, DType::kF16);  // 172 fits only 16-bit and up
  EXPECT_NE(find(*rep, "blk.1.ffn_down.weight").reason.find("172"), std::string::npos);
  EXPECT_EQ(find(*rep, "blk.0.attn_norm.weight").to, DType::kF32);
  EXPECT_LT(rep->bytes_out, rep->bytes_in);
  auto f = GgufFile::open(out);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->find_tensor("blk.0.attn_v.weight")->dtype, DType::kQ8_0);
  const auto kept = f->get_string_array("llmserve.quantize.kept").value();
  EXPECT_TRUE(std::any_of(kept.begin(), kept.end(), [](const std::string& s) { return s.find("output.weight") == 0; }));
  EXPECT_EQ(f->get_string("llmserve.quantize.type").value(), "q4_k");
  // The quantized model loads and runs.
  EXPECT_TRUE(Model::load(out).ok());
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}

TEST(QuantizerTest, DepthPolicyPromotesTensorsAboveTheirTolerance) {
  SyntheticSpec spec = synthetic_preset("tiny").value();
  spec.n_layer = 4;
  const std::string in = temp("d_in.gguf"), out = temp("d_out.gguf");
  ASSERT_TRUE(write_synthetic_model(spec, in).ok());
  QuantizeOptions o;
  o.type = DType::kQ4_0;
  o.policy = QuantPolicy::kDepth;
  o.tolerance = 0.3;  // Q4_0 of Gaussian weights has ~0.1 relative error: fits late layers, not layer 1 (0.075)
  auto rep = quantize_model(in, out, o);
  ASSERT_TRUE(rep.ok()) << rep.status().to_string();
  const auto& early = find(*rep, "blk.0.attn_q.weight");
  const auto& late = find(*rep, "blk.3.attn_q.weight");
  EXPECT_NE(early.to, DType::kQ4_0);
  EXPECT_NE(early.reason.find("promoted"), std::string::npos);
  EXPECT_LE(early.relative_rms, 0.3 * 1 / 4);
  EXPECT_EQ(late.to, DType::kQ4_0);
  EXPECT_LE(late.relative_rms, 0.3);
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}

TEST(QuantizerTest, BadRequestsAreClearErrors) {
  QuantizeOptions o;
  o.type = DType::kIQ2_XXS;
  EXPECT_EQ(quantize_model("a", "b", o).status().code(), StatusCode::kInvalidArgument);
  o.type = DType::kQ8_0;
  EXPECT_EQ(quantize_model("/nonexistent.gguf", temp("x.gguf"), o).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(quantize_model("same.gguf", "same.gguf", o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace llms
