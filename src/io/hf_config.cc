// config.json -> llama.cpp's GGUF metadata, per architecture, as convert_hf_to_gguf.py
// writes it; ModelConfig::from_gguf() then reads the hyperparameters as from any file.
#include <fmt/format.h>

#include <cmath>

#include "io/gguf_writer.h"
#include "io/hf_mapping.h"
#include "io/rope_scaling.h"

namespace llms {
namespace {

using gguf::Value;
using nlohmann::json;

// Typed reads of config.json fields; errors name the field. A null field counts as
// absent (configs write "sliding_window": null).
class Cfg {
 public:
  explicit Cfg(const json& j) : j_(j) {}
  bool has(const std::string& k) const { return j_.contains(k) && !j_[k].is_null(); }
  const json& at(const std::string& k) const { return j_[k]; }

  Result<int> dim(const std::string& k) const {
    if (!has(k)) return invalid_argument(fmt::format("config.json: '{}' is missing", k));
    const json& v = j_[k];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > (int64_t{1} << 30)) {
      return invalid_argument(fmt::format("config.json: '{}' = {} is not a positive integer", k, v.dump()));
    }
    return static_cast<int>(v.get<int64_t>());
  }
  Result<int> dim_or(const std::string& k, int fallback) const { return has(k) ? dim(k) : Result<int>(fallback); }

  Result<double> number_or(const std::string& k, double fallback) const {
    if (!has(k)) return fallback;
    if (!j_[k].is_number()) return invalid_argument(fmt::format("config.json: '{}' = {} is not a number", k, j_[k].dump()));
    return j_[k].get<double>();
  }
  Result<bool> flag_or(const std::string& k, bool fallback) const {
    if (!has(k)) return fallback;
    if (!j_[k].is_boolean()) return invalid_argument(fmt::format("config.json: '{}' = {} is not true or false", k, j_[k].dump()));
    return j_[k].get<bool>();
  }
  Result<std::string> string_or(const std::string& k, std::string fallback) const {
    if (!has(k)) return fallback;
    if (!j_[k].is_string()) return invalid_argument(fmt::format("config.json: '{}' = {} is not a string", k, j_[k].dump()));
    return j_[k].get<std::string>();
  }
  // A field whose other values change the math in ways llmserve does not implement.
  Status require(const std::string& k, const json& expected, const std::string& why) const {
    if (!has(k) || j_[k] == expected) return ok_status();
    return unimplemented(fmt::format("config.json: '{}' = {} is not supported ({})", k, j_[k].dump(), why));
  }

 private:
  const json& j_;
};

// What every architecture's config says, under the names the LLaMA family uses.
struct Common {
  int n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, n_ff = 0, n_ctx = 0, head_dim = 0, n_vocab = 0;
  double eps = 1e-5, theta = 10000.0;
};

struct Writer {
  GgufMetadata& md;
  std::string p;  // "llama."
  void u32(const std::string& k, int v) { md.emplace_back(p + k, Value::u32(static_cast<uint32_t>(v))); }
  void f32(const std::string& k, double v) { md.emplace_back(p + k, Value::f32(static_cast<float>(v))); }
  void str(const std::string& k, std::string v) { md.emplace_back(p + k, Value::string(std::move(v))); }
};

Result<Common> read_common(const Cfg& c) {
  Common m;
  LLMS_ASSIGN_OR_RETURN(m.n_embd, c.dim("hidden_size"));
  LLMS_ASSIGN_OR_RETURN(m.n_layer, c.dim("num_hidden_layers"));
  LLMS_ASSIGN_OR_RETURN(m.n_head, c.dim("num_attention_heads"));
  LLMS_ASSIGN_OR_RETURN(m.n_head_kv, c.dim_or("num_key_value_heads", m.n_head));
  LLMS_ASSIGN_OR_RETURN(m.n_ff, c.dim("intermediate_size"));
  LLMS_ASSIGN_OR_RETURN(m.n_ctx, c.dim("max_position_embeddings"));
  LLMS_ASSIGN_OR_RETURN(m.n_vocab, c.dim("vocab_size"));
  if (m.n_embd % m.n_head != 0 && !c.has("head_dim")) {
    return invalid_argument(fmt::format("config.json: hidden_size {} is not a multiple of num_attention_heads {}",
                                        m.n_embd, m.n_head));
  }
  LLMS_ASSIGN_OR_RETURN(m.head_dim, c.dim_or("head_dim", m.n_embd / m.n_head));
  LLMS_ASSIGN_OR_RETURN(m.eps, c.number_or("rms_norm_eps", 1e-6));
  LLMS_ASSIGN_OR_RETURN(m.theta, c.number_or("rope_theta", 10000.0));
  return m;
}

void write_common(Writer& w, const Common& m) {
  w.u32("context_length", m.n_ctx);
  w.u32("embedding_length", m.n_embd);
  w.u32("block_count", m.n_layer);
  w.u32("feed_forward_length", m.n_ff);
  w.u32("attention.head_count", m.n_head);
  w.u32("attention.head_count_kv", m.n_head_kv);
  w.f32("rope.freq_base", m.theta);
  w.f32("attention.layer_norm_rms_epsilon", m.eps);
}

Status require_activation(const Cfg& c, const std::string& key, std::initializer_list<const char*> ok) {
  LLMS_ASSIGN_OR_RETURN(std::string act, c.string_or(key, *ok.begin()));
  for (const char* a : ok) {
    if (act == a) return ok_status();
  }
  return unimplemented(fmt::format("config.json: '{}' = \"{}\" is not supported (this architecture computes {})", key,
                                   act, *ok.begin()));
}

// The rope_scaling object's type: "none" when absent.
Result<std::string> rope_scaling_type(const Cfg& c) {
  if (!c.has("rope_scaling")) return std::string("none");
  const json& r = c.at("rope_scaling");
  if (!r.is_object()) return invalid_argument("config.json: 'rope_scaling' is not an object");
  const Cfg rs(r);
  LLMS_ASSIGN_OR_RETURN(std::string type, rs.string_or("rope_type", ""));
  if (type.empty()) {
    LLMS_ASSIGN_OR_RETURN(type, rs.string_or("type", "default"));
  }
  return type == "default" ? std::string("none") : type;
}

// rope_scaling of the LLaMA family and Qwen2: linear, yarn, llama3 (as rope_freqs).
Status write_rope_scaling(const Cfg& c, Writer& w, const Common& m, HfPlan& plan, bool allow_llama3) {
  LLMS_ASSIGN_OR_RETURN(std::string type, rope_scaling_type(c));
  if (type == "none") return ok_status();
  const Cfg rs(c.at("rope_scaling"));
  LLMS_ASSIGN_OR_RETURN(double factor, rs.number_or("factor", 1.0));
  if (!(factor >= 1.0) || factor > 1024.0) {
    return invalid_argument(fmt::format("config.json: rope_scaling.factor = {} is out of range [1, 1024]", factor));
  }
  if (type == "linear") {
    w.str("rope.scaling.type", "linear");
    w.f32("rope.scaling.factor", factor);
    return ok_status();
  }
  if (type == "yarn") {
    LLMS_RETURN_IF_ERROR(rs.require("beta_fast", 32, "YaRN with beta_fast 32 is implemented"));
    LLMS_RETURN_IF_ERROR(rs.require("beta_slow", 1, "YaRN with beta_slow 1 is implemented"));
    for (const char* k : {"attention_factor", "mscale", "mscale_all_dim"}) {
      if (rs.has(k)) return unimplemented(fmt::format("config.json: rope_scaling.{} is not supported (YaRN's default "
                                                      "magnitude correction 1 + 0.1 ln(factor) is implemented)", k));
    }
    LLMS_ASSIGN_OR_RETURN(int orig, rs.dim_or("original_max_position_embeddings",
                                              static_cast<int>(std::lround(m.n_ctx / factor))));
    w.str("rope.scaling.type", "yarn");
    w.f32("rope.scaling.factor", factor);
    w.u32("rope.scaling.original_context_length", orig);
    return ok_status();
  }
  if (type == "llama3" && allow_llama3) {
    Llama3RopeScaling s;
    s.factor = factor;
    LLMS_ASSIGN_OR_RETURN(s.low_freq_factor, rs.number_or("low_freq_factor", 1.0));
    LLMS_ASSIGN_OR_RETURN(s.high_freq_factor, rs.number_or("high_freq_factor", 4.0));
    LLMS_ASSIGN_OR_RETURN(int orig, rs.dim_or("original_max_position_embeddings", 8192));
    s.original_context = orig;
    if (!(s.high_freq_factor > s.low_freq_factor) || !(s.low_freq_factor > 0)) {
      return invalid_argument("config.json: rope_scaling needs 0 < low_freq_factor < high_freq_factor");
    }
    plan.rope_freqs = llama3_rope_divisors(m.theta, m.head_dim, s);
    return ok_status();
  }
  return unimplemented(fmt::format("config.json: rope_scaling type '{}' is not supported for {} (supported: linear, "
                                   "yarn{})", type, plan.hf_arch, allow_llama3 ? ", llama3" : ""));
}

Status check_quantization(const Cfg& c) {
  if (!c.has("quantization_config")) return ok_status();
  std::string method = "unknown";
  if (c.at("quantization_config").is_object() && c.at("quantization_config").contains("quant_method")) {
    method = c.at("quantization_config")["quant_method"].dump();
  }
  return unimplemented(fmt::format("config.json: quantization_config (quant_method {}): pre-quantized checkpoints "
                                   "are not supported; serve the F32/F16/BF16 weights (llmserve quantizes them with "
                                   "--type) or a GGUF file", method));
}

// LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM; Qwen2ForCausalLM and
// Qwen2MoeForCausalLM share the layout with NeoX rotary and QKV biases.
Status llama_family(const Cfg& c, Writer& w, HfPlan& plan) {
  LLMS_ASSIGN_OR_RETURN(Common m, read_common(c));
  LLMS_RETURN_IF_ERROR(require_activation(c, "hidden_act", {"silu"}));
  LLMS_RETURN_IF_ERROR(c.require("mlp_bias", false, "the FFN has no gate bias here"));
  write_common(w, m);
  w.u32("rope.dimension_count", m.head_dim);
  if (m.head_dim != m.n_embd / m.n_head || m.n_embd % m.n_head != 0) {
    w.u32("attention.key_length", m.head_dim);
    w.u32("attention.value_length", m.head_dim);
  }
  const bool qwen = plan.arch != "llama";
  plan.permute_qk = !qwen;
  if (!qwen) w.u32("vocab_size", m.n_vocab);
  LLMS_RETURN_IF_ERROR(write_rope_scaling(c, w, m, plan, !qwen));
  if (qwen) {
    LLMS_RETURN_IF_ERROR(c.require("use_sliding_window", false, "Qwen2's sliding window on upper layers is not implemented"));
  } else if (c.has("sliding_window")) {
    // Mistral's window: sequences are held within it, where attention is exact.
    LLMS_ASSIGN_OR_RETURN(int window, c.dim("sliding_window"));
    if (window < m.n_ctx) w.u32("attention.sliding_window", window);
  }
  if (plan.hf_arch == "MixtralForCausalLM") {
    LLMS_ASSIGN_OR_RETURN(plan.n_expert, c.dim("num_local_experts"));
    LLMS_ASSIGN_OR_RETURN(int used, c.dim("num_experts_per_tok"));
    w.u32("expert_count", plan.n_expert);
    w.u32("expert_used_count", used);
  }
  if (plan.arch == "qwen2moe") {
    LLMS_RETURN_IF_ERROR(c.require("norm_topk_prob", false, "Qwen2-MoE's chosen expert weights are not renormalised"));
    LLMS_RETURN_IF_ERROR(c.require("decoder_sparse_step", 1, "every layer has experts here"));
    if (c.has("mlp_only_layers") && !c.at("mlp_only_layers").empty()) {
      return unimplemented("config.json: mlp_only_layers is not supported (every layer has experts here)");
    }
    LLMS_ASSIGN_OR_RETURN(plan.n_expert, c.dim("num_experts"));
    LLMS_ASSIGN_OR_RETURN(int used, c.dim("num_experts_per_tok"));
    LLMS_ASSIGN_OR_RETURN(int ff_exp, c.dim("moe_intermediate_size"));
    LLMS_ASSIGN_OR_RETURN(int ff_sh, c.dim("shared_expert_intermediate_size"));
    w.u32("expert_count", plan.n_expert);
    w.u32("expert_used_count", used);
    w.u32("expert_feed_forward_length", ff_exp);
    w.u32("expert_shared_feed_forward_length", ff_sh);
  }
  plan.n_head = m.n_head;
  plan.n_head_kv = m.n_head_kv;
  plan.n_layer = m.n_layer;
  return ok_status();
}

Result<std::vector<float>> factor_list(const Cfg& rs, const std::string& key, int n) {
  if (!rs.has(key) || !rs.at(key).is_array()) return invalid_argument(fmt::format("config.json: rope_scaling.{} is missing", key));
  std::vector<float> v;
  for (const json& x : rs.at(key)) {
    if (!x.is_number() || !(x.get<double>() > 0.0)) {
      return invalid_argument(fmt::format("config.json: rope_scaling.{} holds {}: factors must be positive", key, x.dump()));
    }
    v.push_back(static_cast<float>(x.get<double>()));
  }
  if (static_cast<int>(v.size()) != n) {
    return invalid_argument(fmt::format("config.json: rope_scaling.{} has {} factors, expected {} (half the rotary "
                                        "dimensions)", key, v.size(), n));
  }
  return v;
}

Status phi3(const Cfg& c, Writer& w, HfPlan& plan) {
  LLMS_ASSIGN_OR_RETURN(Common m, read_common(c));
  LLMS_RETURN_IF_ERROR(require_activation(c, "hidden_act", {"silu"}));
  LLMS_ASSIGN_OR_RETURN(double rot, c.number_or("partial_rotary_factor", 1.0));
  const int rope_dim = static_cast<int>(rot * m.n_embd) / m.n_head;
  LLMS_ASSIGN_OR_RETURN(int orig, c.dim_or("original_max_position_embeddings", m.n_ctx));
  write_common(w, m);
  w.u32("rope.dimension_count", rope_dim);
  w.u32("rope.scaling.original_context_length", orig);
  if (c.has("sliding_window")) {
    LLMS_ASSIGN_OR_RETURN(int window, c.dim("sliding_window"));
    w.u32("attention.sliding_window", window);
  }
  LLMS_ASSIGN_OR_RETURN(std::string type, rope_scaling_type(c));
  if (type == "su" || type == "longrope") {
    const Cfg rs(c.at("rope_scaling"));
    for (const char* k : {"long_mscale", "short_mscale"}) {
      if (rs.has(k)) return unimplemented(fmt::format("config.json: rope_scaling.{} is not supported (the attention "
                                                      "factor sqrt(1 + ln(scale) / ln(original)) is implemented)", k));
    }
    LLMS_ASSIGN_OR_RETURN(plan.rope_long, factor_list(rs, "long_factor", rope_dim / 2));
    LLMS_ASSIGN_OR_RETURN(plan.rope_short, factor_list(rs, "short_factor", rope_dim / 2));
    w.f32("rope.scaling.attn_factor", longrope_attn_factor(m.n_ctx, orig));
  } else if (type != "none") {
    return unimplemented(fmt::format("config.json: rope_scaling type '{}' is not supported for Phi3ForCausalLM "
                                     "(supported: longrope, su)", type));
  }
  plan.n_head = m.n_head;
  plan.n_head_kv = m.n_head_kv;
  plan.n_layer = m.n_layer;
  return ok_status();
}

Status gemma2(const Cfg& c, Writer& w, HfPlan& plan) {
  LLMS_ASSIGN_OR_RETURN(Common m, read_common(c));
  const std::string act_key = c.has("hidden_activation") ? "hidden_activation" : "hidden_act";
  LLMS_RETURN_IF_ERROR(require_activation(c, act_key, {"gelu_pytorch_tanh"}));
  LLMS_ASSIGN_OR_RETURN(std::string type, rope_scaling_type(c));
  if (type != "none") return unimplemented(fmt::format("config.json: rope_scaling '{}' is not supported for Gemma-2", type));
  // llmserve scales scores by head_dim, except for the 46-layer 27B (n_embd / n_head),
  // which is what the released configs' query_pre_attn_scalar says.
  const int scale_dim = m.n_layer == 46 ? m.n_embd / m.n_head : m.head_dim;
  LLMS_RETURN_IF_ERROR(c.require("query_pre_attn_scalar", scale_dim,
                                 fmt::format("attention scores are scaled by 1/sqrt({}) for this shape", scale_dim)));
  write_common(w, m);
  w.u32("attention.key_length", m.head_dim);
  w.u32("attention.value_length", m.head_dim);
  w.u32("rope.dimension_count", m.head_dim);
  LLMS_ASSIGN_OR_RETURN(double attn_cap, c.number_or("attn_logit_softcapping", 0.0));
  LLMS_ASSIGN_OR_RETURN(double final_cap, c.number_or("final_logit_softcapping", 0.0));
  if (attn_cap > 0) w.f32("attn_logit_softcapping", attn_cap);
  if (final_cap > 0) w.f32("final_logit_softcapping", final_cap);
  if (c.has("sliding_window")) {
    LLMS_ASSIGN_OR_RETURN(int window, c.dim("sliding_window"));
    w.u32("attention.sliding_window", window);
  }
  plan.norm_offset = 1.0f;
  plan.tied = true;  // Gemma's head is always its embedding
  plan.n_head = m.n_head;
  plan.n_head_kv = m.n_head_kv;
  plan.n_layer = m.n_layer;
  return ok_status();
}

Status gpt2(const Cfg& c, Writer& w, HfPlan& plan) {
  LLMS_RETURN_IF_ERROR(require_activation(c, "activation_function", {"gelu_new", "gelu_pytorch_tanh"}));
  LLMS_RETURN_IF_ERROR(c.require("scale_attn_by_inverse_layer_idx", false, "scores are scaled by 1/sqrt(head) only"));
  LLMS_RETURN_IF_ERROR(c.require("scale_attn_weights", true, "scores are scaled by 1/sqrt(head)"));
  LLMS_RETURN_IF_ERROR(c.require("add_cross_attention", false, "a decoder-only model has no cross-attention"));
  LLMS_ASSIGN_OR_RETURN(int n_embd, c.dim("n_embd"));
  LLMS_ASSIGN_OR_RETURN(plan.n_layer, c.dim("n_layer"));
  LLMS_ASSIGN_OR_RETURN(plan.n_head, c.dim("n_head"));
  LLMS_ASSIGN_OR_RETURN(int n_pos, c.dim("n_positions"));
  LLMS_ASSIGN_OR_RETURN(int n_ctx, c.dim_or("n_ctx", n_pos));
  LLMS_ASSIGN_OR_RETURN(int n_ff, c.dim_or("n_inner", 4 * n_embd));
  LLMS_ASSIGN_OR_RETURN(double eps, c.number_or("layer_norm_epsilon", 1e-5));
  w.u32("block_count", plan.n_layer);
  w.u32("context_length", n_ctx);
  w.u32("embedding_length", n_embd);
  w.u32("feed_forward_length", n_ff);
  w.u32("attention.head_count", plan.n_head);
  w.f32("attention.layer_norm_epsilon", eps);
  plan.n_head_kv = plan.n_head;
  plan.conv1d = true;
  plan.tied = true;
  return ok_status();
}

struct ArchEntry {
  const char* hf;
  const char* gguf;
  Status (*read)(const Cfg&, Writer&, HfPlan&);
};

constexpr ArchEntry kArchs[] = {
    {"LlamaForCausalLM", "llama", llama_family},     {"MistralForCausalLM", "llama", llama_family},
    {"MixtralForCausalLM", "llama", llama_family},   {"Qwen2ForCausalLM", "qwen2", llama_family},
    {"Qwen2MoeForCausalLM", "qwen2moe", llama_family}, {"Phi3ForCausalLM", "phi3", phi3},
    {"Gemma2ForCausalLM", "gemma2", gemma2},         {"GPT2LMHeadModel", "gpt2", gpt2},
};

}  // namespace

std::vector<std::string> hf_supported_architectures() {
  std::vector<std::string> out;
  for (const auto& a : kArchs) out.push_back(a.hf);
  return out;
}

Result<HfPlan> hf_config_to_gguf(const json& config, const std::string& name, GgufMetadata& md) {
  const Cfg c(config);
  if (!c.has("architectures") || !c.at("architectures").is_array() || c.at("architectures").size() != 1 ||
      !c.at("architectures")[0].is_string()) {
    return invalid_argument("config.json: 'architectures' must list one architecture");
  }
  HfPlan plan;
  plan.hf_arch = c.at("architectures")[0].get<std::string>();
  const ArchEntry* entry = nullptr;
  for (const auto& a : kArchs) {
    if (plan.hf_arch == a.hf) entry = &a;
  }
  if (entry == nullptr) {
    std::string names;
    for (const auto& a : kArchs) names += (names.empty() ? "" : ", ") + std::string(a.hf);
    return unimplemented(fmt::format("config.json: architecture '{}' is not supported (supported: {})", plan.hf_arch, names));
  }
  LLMS_RETURN_IF_ERROR(check_quantization(c));
  plan.arch = entry->gguf;
  md.emplace_back("general.architecture", Value::string(plan.arch));
  md.emplace_back("general.name", Value::string(name));
  Writer w{md, plan.arch + "."};
  LLMS_RETURN_IF_ERROR(entry->read(c, w, plan));
  if (!plan.tied) {
    LLMS_ASSIGN_OR_RETURN(plan.tied, c.flag_or("tie_word_embeddings", false));
  }
  return plan;
}

}  // namespace llms
