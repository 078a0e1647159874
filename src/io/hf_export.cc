#include "io/hf_export.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/hf_mapping.h"
#include "io/rope_scaling.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

using nlohmann::json;

// GGUF metadata reads for the config; a missing key takes the reader's default.
struct Keys {
  const GgufFile& f;
  std::string p;  // "llama."
  int u(const std::string& k, int fallback = 0) const {
    auto v = f.get_uint_or(p + k, static_cast<uint64_t>(fallback));
    return v.ok() ? static_cast<int>(*v) : fallback;
  }
  double d(const std::string& k, double fallback) const {
    auto v = f.get_float_or(p + k, fallback);
    return v.ok() ? *v : fallback;
  }
  bool has(const std::string& k) const { return f.has(p + k); }
};

std::vector<float> tensor_floats(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.find_tensor(name);
  if (t == nullptr) return {};
  std::vector<float> v(static_cast<size_t>(t->num_elements()));
  dequantize_row(t->dtype, f.read(*t).data(), v.data(), t->num_elements());
  return v;
}

const char* torch_dtype(DType t) {
  return t == DType::kF16 ? "float16" : t == DType::kBF16 ? "bfloat16" : "float32";
}

// rope_scaling of the LLaMA family and Qwen2, and Llama-3.1's from its divisors.
Status rope_scaling(const Keys& k, int head_dim, json& c) {
  const auto scaling = k.f.get_string_or(k.p + "rope.scaling.type", "none");
  const std::string type = scaling.ok() ? *scaling : "none";
  if (type == "linear") c["rope_scaling"] = {{"type", "linear"}, {"factor", k.d("rope.scaling.factor", 1.0)}};
  if (type == "yarn") {
    c["rope_scaling"] = {{"type", "yarn"}, {"factor", k.d("rope.scaling.factor", 1.0)},
                         {"original_max_position_embeddings", k.u("rope.scaling.original_context_length")}};
  }
  const std::vector<float> freqs = tensor_floats(k.f, "rope_freqs.weight");
  if (freqs.empty()) return ok_status();
  const Llama3RopeScaling s;
  if (freqs != llama3_rope_divisors(k.d("rope.freq_base", 10000.0), head_dim, s)) {
    return unimplemented("rope_freqs.weight holds divisors of no known scaling (Llama-3.1's with factor 8 are)");
  }
  c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", s.factor}, {"low_freq_factor", s.low_freq_factor},
                       {"high_freq_factor", s.high_freq_factor},
                       {"original_max_position_embeddings", static_cast<int>(s.original_context)}};
  return ok_status();
}

void llama_common(const Keys& k, int n_vocab, json& c) {
  const int n_head = k.u("attention.head_count");
  c["hidden_size"] = k.u("embedding_length");
  c["num_hidden_layers"] = k.u("block_count");
  c["num_attention_heads"] = n_head;
  c["num_key_value_heads"] = k.u("attention.head_count_kv", n_head);
  c["intermediate_size"] = k.u("feed_forward_length");
  c["max_position_embeddings"] = k.u("context_length", 2048);
  c["rms_norm_eps"] = k.d("attention.layer_norm_rms_epsilon", 1e-5);
  c["rope_theta"] = k.d("rope.freq_base", 10000.0);
  c["vocab_size"] = n_vocab;
  c["hidden_act"] = "silu";
}

// config.json of `f`, and the plan the reader will use for it.
Result<HfPlan> config_of(const GgufFile& f, json& c) {
  HfPlan plan;
  LLMS_ASSIGN_OR_RETURN(plan.arch, f.get_string("general.architecture"));
  const Keys k{f, plan.arch + "."};
  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr) return not_found("tensor 'token_embd.weight' is missing");
  const int n_vocab = static_cast<int>(embd->ne[1]);
  plan.n_layer = k.u("block_count");
  plan.n_head = k.u("attention.head_count");
  plan.n_head_kv = k.u("attention.head_count_kv", plan.n_head);
  plan.n_expert = k.u("expert_count");
  plan.tied = f.find_tensor("output.weight") == nullptr;
  const int head_dim = k.u("attention.key_length", k.u("embedding_length") / std::max(1, plan.n_head));
  std::string model_type;
  if (plan.arch == "llama" || plan.arch == "qwen2" || plan.arch == "qwen2moe") {
    llama_common(k, n_vocab, c);
    if (k.has("attention.key_length")) c["head_dim"] = head_dim;
    LLMS_RETURN_IF_ERROR(rope_scaling(k, head_dim, c));
  }
  if (plan.arch == "llama") {
    plan.permute_qk = true;
    plan.hf_arch = plan.n_expert > 0 ? "MixtralForCausalLM" : k.has("attention.sliding_window") ? "MistralForCausalLM"
                                                                                                : "LlamaForCausalLM";
    model_type = plan.n_expert > 0 ? "mixtral" : k.has("attention.sliding_window") ? "mistral" : "llama";
    if (k.has("attention.sliding_window")) c["sliding_window"] = k.u("attention.sliding_window");
    if (plan.n_expert > 0) {
      c["num_local_experts"] = plan.n_expert;
      c["num_experts_per_tok"] = k.u("expert_used_count");
    }
    c["attention_bias"] = f.find_tensor("blk.0.attn_q.bias") != nullptr;
    c["mlp_bias"] = false;
  } else if (plan.arch == "qwen2" || plan.arch == "qwen2moe") {
    plan.hf_arch = plan.arch == "qwen2" ? "Qwen2ForCausalLM" : "Qwen2MoeForCausalLM";
    model_type = plan.arch == "qwen2" ? "qwen2" : "qwen2_moe";
    c["use_sliding_window"] = false;
    if (plan.arch == "qwen2moe") {
      c["num_experts"] = plan.n_expert;
      c["num_experts_per_tok"] = k.u("expert_used_count");
      c["moe_intermediate_size"] = k.u("expert_feed_forward_length");
      c["shared_expert_intermediate_size"] = k.u("expert_shared_feed_forward_length");
      c["norm_topk_prob"] = false;
      c["decoder_sparse_step"] = 1;
      c["mlp_only_layers"] = json::array();
    }
  } else if (plan.arch == "phi3") {
    plan.hf_arch = "Phi3ForCausalLM", model_type = "phi3";
    llama_common(k, n_vocab, c);
    const int ctx = k.u("context_length", 2048), orig = k.u("rope.scaling.original_context_length", ctx);
    const int rope_dim = k.u("rope.dimension_count", head_dim);
    c["original_max_position_embeddings"] = orig;
    if (rope_dim != head_dim) c["partial_rotary_factor"] = static_cast<double>(rope_dim) / head_dim;
    if (k.has("attention.sliding_window")) c["sliding_window"] = k.u("attention.sliding_window");
    const std::vector<float> lf = tensor_floats(f, "rope_factors_long.weight");
    if (!lf.empty()) {
      if (std::fabs(k.d("rope.scaling.attn_factor", 1.0) - longrope_attn_factor(ctx, orig)) > 1e-6) {
        return unimplemented("phi3: rope.scaling.attn_factor is not LongRoPE's sqrt(1 + ln(scale) / ln(original))");
      }
      c["rope_scaling"] = {{"type", "longrope"}, {"long_factor", lf},
                           {"short_factor", tensor_floats(f, "rope_factors_short.weight")}};
    }
  } else if (plan.arch == "gemma2") {
    plan.hf_arch = "Gemma2ForCausalLM", model_type = "gemma2";
    plan.norm_offset = 1.0f;
    plan.tied = true;
    llama_common(k, n_vocab, c);
    c.erase("hidden_act");
    c["head_dim"] = head_dim;
    c["hidden_activation"] = "gelu_pytorch_tanh";
    c["query_pre_attn_scalar"] = plan.n_layer == 46 ? k.u("embedding_length") / plan.n_head : head_dim;
    c["attn_logit_softcapping"] = k.d("attn_logit_softcapping", 0.0);
    c["final_logit_softcapping"] = k.d("final_logit_softcapping", 0.0);
    if (k.has("attention.sliding_window")) c["sliding_window"] = k.u("attention.sliding_window");
  } else if (plan.arch == "gpt2") {
    plan.hf_arch = "GPT2LMHeadModel", model_type = "gpt2";
    plan.conv1d = true;
    plan.tied = true;
    c["n_embd"] = k.u("embedding_length");
    c["n_layer"] = plan.n_layer;
    c["n_head"] = plan.n_head;
    c["n_positions"] = c["n_ctx"] = k.u("context_length", 1024);
    c["n_inner"] = k.u("feed_forward_length");
    c["layer_norm_epsilon"] = k.d("attention.layer_norm_epsilon", 1e-5);
    c["activation_function"] = "gelu_new";
    c["vocab_size"] = n_vocab;
  } else {
    return unimplemented(fmt::format("architecture '{}' has no Hugging Face form here", plan.arch));
  }
  c["architectures"] = {plan.hf_arch};
  c["model_type"] = model_type;
  c["tie_word_embeddings"] = f.find_tensor("output.weight") == nullptr || plan.arch == "gpt2";
  c["torch_dtype"] = torch_dtype(embd->dtype);
  for (const char* id : {"bos", "eos"}) {
    if (auto v = f.get_uint(fmt::format("tokenizer.ggml.{}_token_id", id)); v.ok()) c[fmt::format("{}_token_id", id)] = *v;
  }
  return plan;
}

// The directory name and layout of GGUF tensor `t`.
struct Out {
  std::string name;
  int64_t expert = -1;
};

Result<std::vector<SafetensorsOutput>> outputs_of(const GgufFile& f, const HfPlan& plan) {
  std::vector<SafetensorsOutput> out;
  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  for (const GgufTensorInfo& t : f.tensors()) {
    if (t.name.rfind("rope_", 0) == 0) continue;  // in config.json
    if (plan.arch == "gpt2" && t.name == "output.weight" && t.num_bytes == embd->num_bytes &&
        std::memcmp(f.read(t).data(), f.read(*embd).data(), t.num_bytes) == 0) {
      continue;  // the copy of the embedding that GGUF files of GPT-2 carry
    }
    std::string hf(find_name(hf_top_names(plan), t.name, true));
    std::string suffix;
    int layer = -1;
    if (hf.empty()) {
      size_t dot = t.name.find('.', 4);
      if (t.name.rfind("blk.", 0) != 0 || dot == std::string::npos) return unimplemented("no directory name for " + t.name);
      layer = std::stoi(t.name.substr(4, dot - 4));
      suffix = t.name.substr(dot + 1);
      hf = std::string(find_name(hf_layer_names(plan), suffix, true));
      if (!hf.empty()) hf = fmt::format("{}{}.{}", hf_layer_prefix(plan), layer, hf);
    }
    const std::string_view expert_tail = find_name(hf_expert_names(plan), suffix, true);
    if (hf.empty() && (expert_tail.empty() || t.n_dims != 3)) return unimplemented("no directory name for " + t.name);
    const DType type = t.n_dims == 1 ? DType::kF32 : t.dtype;
    if (safetensors_dtype_name(type).empty()) {
      return unimplemented(fmt::format("tensor '{}' is {}: a Hugging Face directory holds F32, F16 or BF16", t.name,
                                       dtype_name(t.dtype)));
    }
    const bool rotary = plan.permute_qk && (suffix.rfind("attn_q.", 0) == 0 || suffix.rfind("attn_k.", 0) == 0);
    const int heads = suffix.rfind("attn_q.", 0) == 0 ? plan.n_head : plan.n_head_kv;
    if (t.n_dims == 1) {
      const bool shexp_gate = suffix == "ffn_gate_inp_shexp.weight";
      const bool norm = t.name.size() > 11 && t.name.compare(t.name.size() - 11, 11, "norm.weight") == 0;
      const float offset = norm ? -plan.norm_offset : 0.0f;
      std::vector<int64_t> shape = shexp_gate ? std::vector<int64_t>{1, t.ne[0]} : std::vector<int64_t>{t.ne[0]};
      out.push_back({hf, type, shape, [&f, &t, offset, rotary, heads](std::span<uint8_t> o) {
                       std::vector<float> v(static_cast<size_t>(t.ne[0]));
                       dequantize_row(t.dtype, f.read(t).data(), v.data(), t.ne[0]);
                       for (float& x : v) x += offset;
                       if (rotary) {
                         permute_rotary_rows(reinterpret_cast<const uint8_t*>(v.data()), o.data(), t.ne[0], 4, heads, true);
                       } else {
                         std::memcpy(o.data(), v.data(), o.size());
                       }
                     }});
    } else if (t.n_dims == 3) {
      for (int64_t e = 0; e < t.ne[2]; ++e) {
        const std::string name = fmt::format("{}{}.{}{}.{}", hf_layer_prefix(plan), layer, hf_expert_prefix(plan), e, expert_tail);
        const uint64_t part = t.num_bytes / static_cast<uint64_t>(t.ne[2]);
        out.push_back({name, type, {t.ne[1], t.ne[0]}, [&f, &t, e, part](std::span<uint8_t> o) {
                         std::memcpy(o.data(), f.read(t).data() + e * part, part);
                       }});
      }
    } else if (plan.conv1d && layer >= 0) {
      out.push_back({hf, type, {t.ne[0], t.ne[1]}, [&f, &t](std::span<uint8_t> o) {
                       const int64_t elem = static_cast<int64_t>(t.num_bytes) / t.num_elements();
                       transpose_matrix(f.read(t).data(), o.data(), t.ne[1], t.ne[0], elem);
                     }});
    } else {
      out.push_back({hf, type, {t.ne[1], t.ne[0]}, [&f, &t, rotary, heads](std::span<uint8_t> o) {
                       const TensorData d = f.read(t);
                       if (rotary) {
                         permute_rotary_rows(d.data(), o.data(), t.ne[1], d.view().row_bytes(), heads, true);
                       } else {
                         std::memcpy(o.data(), d.data(), o.size());
                       }
                     }});
    }
  }
  return out;
}

Status write_json(const std::filesystem::path& p, const json& j) {
  std::ofstream out(p);
  out << j.dump(2) << "\n";
  return out ? ok_status() : internal_error("cannot write " + p.string());
}

}  // namespace

Result<HfPlan> hf_plan_of(const GgufFile& model, nlohmann::json& config) { return config_of(model, config); }

Status write_hf_model(const GgufFile& f, const std::string& dir, const HfExportOptions& o) {
  json config = json::object();
  LLMS_ASSIGN_OR_RETURN(HfPlan plan, config_of(f, config));
  LLMS_ASSIGN_OR_RETURN(std::vector<SafetensorsOutput> tensors, outputs_of(f, plan));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path d(dir);
  LLMS_RETURN_IF_ERROR(write_json(d / "config.json", config));
  json gen = {{"_from_model_config", true}};
  for (const char* k : {"bos_token_id", "eos_token_id"}) {
    if (config.contains(k)) gen[k] = config[k];
  }
  LLMS_RETURN_IF_ERROR(write_json(d / "generation_config.json", gen));
  if (o.max_shard_bytes == 0) return write_safetensors((d / "model.safetensors").string(), std::move(tensors));
  std::vector<std::vector<SafetensorsOutput>> shards(1);
  uint64_t in_shard = 0, total = 0;
  for (auto& t : tensors) {
    if (in_shard > 0 && in_shard + t.num_bytes() > o.max_shard_bytes) shards.emplace_back(), in_shard = 0;
    in_shard += t.num_bytes();
    total += t.num_bytes();
    shards.back().push_back(std::move(t));
  }
  json index = {{"metadata", {{"total_size", total}}}, {"weight_map", json::object()}};
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string name = fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, shards.size());
    for (const auto& t : shards[i]) index["weight_map"][t.name] = name;
    LLMS_RETURN_IF_ERROR(write_safetensors((d / name).string(), std::move(shards[i])));
  }
  return write_json(d / "model.safetensors.index.json", index);
}

}  // namespace llms
