// Mixtures of experts against the double-precision reference (model/double_reference.h),
// and the files of experts that are refused.
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

TEST(ModelReferenceTest, GeneratedMixtralMatchesDoubleReference) {
  SyntheticSpec spec;
  spec.n_vocab = 300, spec.n_embd = 64, spec.n_layer = 2, spec.n_head = 4, spec.n_head_kv = 2, spec.n_ff = 96;
  spec.n_expert = 4, spec.n_expert_used = 2, spec.strong_layers = true, spec.seed = 13;

  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_mixtral.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->config().n_expert, 4);
  EXPECT_TRUE((*model)->config().norm_expert_weights);
  check_model(path, {1, 5, 77, 299, 8, 100, 42, 42, 3, 17, 250, 6, 9, 9, 31});
  std::filesystem::remove(path);
}

TEST(ModelReferenceTest, GeneratedQwen2MoeMatchesDoubleReference) {
  for (DType type : {DType::kF32, DType::kF16}) {
    SyntheticSpec spec;
    spec.arch = "qwen2moe";
    spec.n_vocab = 300, spec.n_embd = 64, spec.n_layer = 2, spec.n_head = 4, spec.n_head_kv = 2, spec.n_ff = 128;
    spec.n_expert = 6, spec.n_expert_used = 3, spec.n_ff_exp = 32, spec.strong_layers = true, spec.seed = 17;
    spec.weight_type = type;
    // F16: the default weights, whose larger logits keep the F16 rounding of the
    // products' inputs (which a last-bit difference flips) within the bound.
    if (type == DType::kF16) spec.strong_layers = false;
    const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_qwen2moe.gguf";
    ASSERT_TRUE(write_synthetic_model(spec, path).ok());
    auto model = Model::load(path);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    const ModelConfig& c = (*model)->config();
    EXPECT_EQ(c.n_ff_exp, 32);
    EXPECT_EQ(c.n_ff_shexp, 128);
    EXPECT_FALSE(c.norm_expert_weights);
    check_model(path, {1, 5, 77, 299, 8, 100, 42, 42, 3, 17, 250, 6, 9, 9, 31});
    std::filesystem::remove(path);
  }
}

TEST(ModelReferenceTest, MixtureOfExpertsBadFilesAreRefusedByName) {
  auto config_of = [](GgufWriter& w) -> Status {
    const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_moe.gguf";
    EXPECT_TRUE(w.write(path).ok());
    auto file = GgufFile::open(path);
    EXPECT_TRUE(file.ok()) << file.status().to_string();
    auto config = ModelConfig::from_gguf(*file);
    std::filesystem::remove(path);
    return config.status();
  };
  GgufWriter w;
  w.set("general.architecture", gguf::Value::string("llama"));
  w.set("llama.expert_count", gguf::Value::u32(8));
  w.set("llama.expert_used_count", gguf::Value::u32(9));
  const Status too_many = config_of(w);
  EXPECT_EQ(too_many.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_many.message().find("expert_used_count"), std::string::npos) << too_many.message();
  GgufWriter phi;
  phi.set("general.architecture", gguf::Value::string("phi3"));
  phi.set("phi3.expert_count", gguf::Value::u32(16));
  const Status other = config_of(phi);
  EXPECT_EQ(other.code(), StatusCode::kUnimplemented);
  EXPECT_NE(other.message().find("phi3"), std::string::npos) << other.message();
}

TEST(ModelReferenceTest, ExpertsStoredOneTensorEachAreRefusedByName) {
  SyntheticSpec spec;
  spec.n_vocab = 300, spec.n_embd = 32, spec.n_layer = 1, spec.n_head = 2, spec.n_head_kv = 2, spec.n_ff = 32;
  const std::string dense = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_dense.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, dense).ok());
  auto src = GgufFile::open(dense);
  ASSERT_TRUE(src.ok());
  // The dense file's tensors, with expert metadata and its FFN renamed to expert 0's
  // tensors of the old per-expert layout.
  GgufWriter w;
  for (const auto& [key, value] : src->metadata()) w.set(key, value);
  w.set("llama.expert_count", gguf::Value::u32(2));
  w.set("llama.expert_used_count", gguf::Value::u32(1));
  for (const auto& t : src->tensors()) {
    std::string name = t.name;
    if (const size_t at = name.find("ffn_gate.weight"); at != std::string::npos) name.replace(at, 15, "ffn_gate.0.weight");
    w.add_tensor(name, t.dtype, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                 std::span<const uint8_t>(t.data, t.num_bytes));
  }
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_split_experts.gguf";
  ASSERT_TRUE(w.write(path).ok());
  auto model = Model::load(path);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(model.status().message().find("ffn_gate.0.weight"), std::string::npos) << model.status().message();
  std::filesystem::remove(path);
  std::filesystem::remove(dense);
}

}  // namespace
}  // namespace llms
