// Hugging Face directories: what people have instead of one (pickles, adapters,
// inconsistent shards) is an error saying what to do; config.json fields that change
// the math are read or refused by name; tensors map to llama.cpp's names and layouts.
#include "io/hf_model.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/hf_checkpoint.h"
#include "io/hf_mapping.h"
#include "io/safetensors.h"

namespace llms {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class HfDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_hf_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ + "/" + name) << text; }
  // A safetensors file of F32 tensors, each filled with its index in the list + 1.
  void tensors(const std::string& name, const std::vector<std::pair<std::string, std::vector<int64_t>>>& ts) {
    std::vector<SafetensorsOutput> out;
    float v = 0;
    for (const auto& [n, shape] : ts) {
      v += 1;
      out.push_back({n, DType::kF32, shape, [v](std::span<uint8_t> o) {
                       for (size_t i = 0; i < o.size(); i += 4) std::memcpy(o.data() + i, &v, 4);
                     }});
    }
    ASSERT_TRUE(write_safetensors(dir_ + "/" + name, out).ok());
  }
  std::string error() {
    auto f = open_hf_model(dir_);
    return f.ok() ? std::string("(opened)") : f.status().message();
  }

  std::string dir_;
};

// A one-layer LLaMA of hidden 8, 2 heads of 4 (1 KV head), FFN 16, vocab 10.
json llama_config() {
  return {{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", 8}, {"num_hidden_layers", 1},
          {"num_attention_heads", 2}, {"num_key_value_heads", 1}, {"intermediate_size", 16},
          {"max_position_embeddings", 64}, {"vocab_size", 10}, {"rms_norm_eps", 1e-5}, {"hidden_act", "silu"}};
}

std::vector<std::pair<std::string, std::vector<int64_t>>> llama_tensors() {
  const std::string p = "model.layers.0.";
  return {{"model.embed_tokens.weight", {10, 8}},     {"lm_head.weight", {10, 8}},
          {"model.norm.weight", {8}},                 {p + "input_layernorm.weight", {8}},
          {p + "self_attn.q_proj.weight", {8, 8}},    {p + "self_attn.k_proj.weight", {4, 8}},
          {p + "self_attn.v_proj.weight", {4, 8}},    {p + "self_attn.o_proj.weight", {8, 8}},
          {p + "post_attention_layernorm.weight", {8}}, {p + "mlp.gate_proj.weight", {16, 8}},
          {p + "mlp.up_proj.weight", {16, 8}},        {p + "mlp.down_proj.weight", {8, 16}}};
}

TEST_F(HfDirTest, PickleWeightsAreRefusedWithTheWayToConvert) {
  write("config.json", llama_config().dump());
  write("pytorch_model.bin", "PK\x03\x04 not unpickled");
  const std::string e = error();
  EXPECT_NE(e.find("pytorch_model.bin"), std::string::npos) << e;
  EXPECT_NE(e.find("arbitrary code"), std::string::npos) << e;
  EXPECT_NE(e.find("safe_serialization=True"), std::string::npos) << e;
}

TEST_F(HfDirTest, AnAdapterIsNamedAsOne) {
  write("adapter_config.json", R"({"base_model_name_or_path": "meta-llama/Llama-2-7b-hf", "peft_type": "LORA"})");
  write("adapter_model.safetensors", "");
  const std::string e = error();
  EXPECT_NE(e.find("LoRA adapter of 'meta-llama/Llama-2-7b-hf'"), std::string::npos) << e;
  EXPECT_NE(e.find("merge_and_unload"), std::string::npos) << e;
}

TEST_F(HfDirTest, NoConfigOrNoWeights) {
  EXPECT_NE(error().find("no config.json"), std::string::npos);
  write("config.json", llama_config().dump());
  EXPECT_NE(error().find("no weights"), std::string::npos) << error();
  tensors("model-00001-of-00002.safetensors", {{"model.norm.weight", {8}}});
  EXPECT_NE(error().find("through their index"), std::string::npos) << error();
}

TEST_F(HfDirTest, ShardsMustAgreeWithTheirIndex) {
  write("config.json", llama_config().dump());
  tensors("a.safetensors", {{"model.norm.weight", {8}}});
  tensors("b.safetensors", {{"lm_head.weight", {10, 8}}});
  const auto index = [&](json map, uint64_t total) {
    write("model.safetensors.index.json", json{{"metadata", {{"total_size", total}}}, {"weight_map", map}}.dump());
    return error();
  };
  const json both = {{"model.norm.weight", "a.safetensors"}, {"lm_head.weight", "b.safetensors"}};
  auto ckpt = [&] { return HfCheckpoint::open(dir_); };
  index(both, 32 + 320);
  ASSERT_TRUE(ckpt().ok()) << ckpt().status().to_string();
  EXPECT_EQ(ckpt()->find("lm_head.weight")->num_bytes, 320u);
  EXPECT_NE(index(both, 999).find("mismatched shards"), std::string::npos);
  EXPECT_NE(index({{"model.norm.weight", "b.safetensors"}, {"lm_head.weight", "b.safetensors"}}, 352)
                .find("places tensor 'model.norm.weight' in b.safetensors, which does not hold it"),
            std::string::npos);
  EXPECT_NE(index({{"model.norm.weight", "a.safetensors"}, {"lm_head.weight", "b.safetensors"}, {"x", "c.safetensors"}}, 352)
                .find("c.safetensors is missing"),
            std::string::npos);
  EXPECT_NE(index({{"model.norm.weight", "../a.safetensors"}}, 32).find("files of the directory itself"),
            std::string::npos);
  // A shard holding a tensor the index does not list (or lists elsewhere).
  tensors("a.safetensors", {{"model.norm.weight", {8}}, {"model.layers.0.input_layernorm.weight", {8}}});
  EXPECT_NE(index(both, 352).find("holds tensor 'model.layers.0.input_layernorm.weight', which "
                                  "model.safetensors.index.json does not list"),
            std::string::npos) << index(both, 352);
  tensors("a.safetensors", {{"model.norm.weight", {8}}});
  // A truncated shard: the reader names the shard.
  fs::resize_file(dir_ + "/b.safetensors", fs::file_size(dir_ + "/b.safetensors") - 4);
  EXPECT_NE(index(both, 352).find("b.safetensors: truncated"), std::string::npos) << index(both, 352);
}

TEST_F(HfDirTest, LlamaMapsToLlamaCppNamesWithRotaryRows) {
  write("config.json", llama_config().dump());
  tensors("model.safetensors", llama_tensors());
  auto f = open_hf_model(dir_);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->get_string("general.architecture").value(), "llama");
  EXPECT_EQ(f->get_uint("llama.attention.head_count_kv").value(), 1u);
  EXPECT_EQ(f->get_uint("llama.rope.dimension_count").value(), 4u);
  const GgufTensorInfo* q = f->find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->data, nullptr);  // rows permuted when read
  EXPECT_EQ(q->ne[0], 8);
  EXPECT_EQ(q->ne[1], 8);
  EXPECT_NE(f->find_tensor("blk.0.ffn_gate.weight")->data, nullptr);  // in place
  EXPECT_NE(f->find_tensor("output.weight"), nullptr);
  EXPECT_EQ(f->find_tensor("blk.0.attn_norm.weight")->dtype, DType::kF32);
}

TEST(HfMappingTest, RotaryRowsFollowLlamaCppsReshape) {
  // Two heads of 4 rows: reshape [2, 2, 2] and swap the last two axes, so each head's
  // rows 0 1 2 3 become 0 2 1 3.
  const uint8_t hf[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  uint8_t gguf[8], back[8];
  permute_rotary_rows(hf, gguf, 8, 1, 2, false);
  EXPECT_EQ(std::vector<uint8_t>(gguf, gguf + 8), (std::vector<uint8_t>{0, 2, 1, 3, 4, 6, 5, 7}));
  permute_rotary_rows(gguf, back, 8, 1, 2, true);
  EXPECT_EQ(std::vector<uint8_t>(back, back + 8), std::vector<uint8_t>(hf, hf + 8));
  const uint8_t m[6] = {1, 2, 3, 4, 5, 6};  // [2, 3]
  uint8_t t[6];
  transpose_matrix(m, t, 2, 3, 1);
  EXPECT_EQ(std::vector<uint8_t>(t, t + 6), (std::vector<uint8_t>{1, 4, 2, 5, 3, 6}));
}

TEST_F(HfDirTest, TiedHeadMayBeStoredAsEitherName) {
  json c = llama_config();
  c["tie_word_embeddings"] = true;
  write("config.json", c.dump());
  auto ts = llama_tensors();
  ts.erase(ts.begin());  // only lm_head.weight, as TinyStories-656K
  tensors("model.safetensors", ts);
  auto f = open_hf_model(dir_);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_NE(f->find_tensor("token_embd.weight"), nullptr);
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);
}

TEST_F(HfDirTest, TensorsItCannotPlaceAreErrors) {
  write("config.json", llama_config().dump());
  auto ts = llama_tensors();
  ts.push_back({"model.layers.0.mlp.gate_proj.bias", {16}});
  tensors("model.safetensors", ts);
  EXPECT_NE(error().find("tensor 'model.layers.0.mlp.gate_proj.bias' is not part of a LlamaForCausalLM"),
            std::string::npos) << error();
  ts.pop_back();
  ts.erase(ts.begin() + 1);  // no lm_head, not tied
  tensors("model.safetensors", ts);
  EXPECT_NE(error().find("lm_head.weight is missing"), std::string::npos) << error();
}

// config.json -> metadata, or the error naming the field.
Result<HfPlan> plan_of(const json& c, GgufMetadata* md = nullptr) {
  GgufMetadata local;
  return hf_config_to_gguf(c, "m", md != nullptr ? *md : local);
}

std::string config_error(json c) {
  auto p = plan_of(c);
  return p.ok() ? std::string("(read)") : p.status().message();
}

const gguf::Value* find(const GgufMetadata& md, const std::string& key) {
  for (const auto& [k, v] : md) {
    if (k == key) return &v;
  }
  return nullptr;
}

TEST(HfConfigTest, FieldsThatChangeTheMathAreReadOrRefusedByName) {
  json c = llama_config();
  c["architectures"] = {"BertModel"};
  EXPECT_NE(config_error(c).find("architecture 'BertModel' is not supported (supported: LlamaForCausalLM"),
            std::string::npos);
  const std::vector<std::pair<json, std::string>> refused = {
      {{{"mlp_bias", true}}, "'mlp_bias'"},
      {{{"hidden_act", "gelu"}}, "'hidden_act' = \"gelu\""},
      {{{"rope_scaling", {{"rope_type", "dynamic"}, {"factor", 2.0}}}}, "rope_scaling type 'dynamic'"},
      {{{"rope_scaling", {{"type", "yarn"}, {"factor", 4.0}, {"beta_fast", 16}}}}, "'beta_fast'"},
      {{{"quantization_config", {{"quant_method", "gptq"}}}}, "pre-quantized"},
      {{{"hidden_size", 0}}, "'hidden_size' = 0"},
  };
  for (const auto& [patch, message] : refused) {
    json p = llama_config();
    p.update(patch);
    EXPECT_NE(config_error(p).find(message), std::string::npos) << patch.dump() << ": " << config_error(p);
  }
  json q = llama_config();
  q["architectures"] = {"Qwen2ForCausalLM"};
  q["use_sliding_window"] = true;
  EXPECT_NE(config_error(q).find("'use_sliding_window'"), std::string::npos);
  json g = {{"architectures", {"GPT2LMHeadModel"}}, {"n_embd", 8}, {"n_layer", 1}, {"n_head", 2},
            {"n_positions", 16}, {"activation_function", "gelu_new"}, {"scale_attn_by_inverse_layer_idx", true}};
  EXPECT_NE(config_error(g).find("'scale_attn_by_inverse_layer_idx'"), std::string::npos);
}

TEST(HfConfigTest, RopeScalingVariants) {
  json c = llama_config();
  c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  auto p = plan_of(c);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->rope_freqs.size(), 2u);  // head_dim 4
  GgufMetadata md;
  c["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 16}};
  ASSERT_TRUE(plan_of(c, &md).ok());
  EXPECT_EQ(find(md, "llama.rope.scaling.type")->as_string(), "yarn");
  EXPECT_EQ(find(md, "llama.rope.scaling.original_context_length")->as_u64(), 16u);
  json phi = llama_config();
  phi["architectures"] = {"Phi3ForCausalLM"};
  phi["original_max_position_embeddings"] = 16;
  phi["rope_scaling"] = {{"type", "longrope"}, {"long_factor", {1.0, 2.0}}, {"short_factor", {1.0, 1.5}}};
  md.clear();
  auto pp = plan_of(phi, &md);
  ASSERT_TRUE(pp.ok()) << pp.status().to_string();
  EXPECT_EQ(pp->rope_long, (std::vector<float>{1.0f, 2.0f}));
  // sqrt(1 + ln(64 / 16) / ln(16)) = sqrt(1.5)
  EXPECT_NEAR(find(md, "phi3.rope.scaling.attn_factor")->as_f64(), std::sqrt(1.5), 1e-6);
  phi["rope_scaling"]["long_factor"] = {1.0};
  EXPECT_NE(config_error(phi).find("has 1 factors, expected 2"), std::string::npos);
}

}  // namespace
}  // namespace llms
