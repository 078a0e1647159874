#include "model/config.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace llms {
namespace {

Result<int> get_dim(const GgufFile& f, const std::string& key) {
  LLMS_ASSIGN_OR_RETURN(uint64_t v, f.get_uint(key));
  if (v == 0 || v > (1u << 24)) return invalid_argument(fmt::format("'{}' = {} is out of range", key, v));
  return static_cast<int>(v);
}

Result<int> get_dim_or(const GgufFile& f, const std::string& key, int fallback) {
  if (!f.has(key)) return fallback;
  return get_dim(f, key);
}

// A count that may be absent or 0 (expert counts of a dense model).
Result<int> get_count_or(const GgufFile& f, const std::string& key) {
  if (!f.has(key)) return 0;
  LLMS_ASSIGN_OR_RETURN(uint64_t v, f.get_uint(key));
  if (v > 4096) return invalid_argument(fmt::format("'{}' = {} is out of range (at most 4096)", key, v));
  return static_cast<int>(v);
}

// The mixture-of-experts keys: expert_count and expert_used_count (llama: Mixtral;
// qwen2moe, which also has its experts' and shared expert's widths).
Status read_experts(const GgufFile& f, const std::string& p, ModelConfig& c) {
  LLMS_ASSIGN_OR_RETURN(c.n_expert, get_count_or(f, p + "expert_count"));
  LLMS_ASSIGN_OR_RETURN(c.n_expert_used, get_count_or(f, p + "expert_used_count"));
  const bool qwen = c.arch == Architecture::kQwen2Moe;
  if (c.n_expert == 0) {
    if (qwen) return invalid_argument(fmt::format("'{}expert_count' is missing: qwen2moe needs experts", p));
    if (c.n_expert_used > 0) return invalid_argument(fmt::format("'{}expert_used_count' without experts", p));
    return ok_status();
  }
  if (c.arch != Architecture::kLlama && !qwen) {
    return unimplemented(fmt::format("mixture-of-experts '{}' models are not supported (supported: llama as Mixtral, "
                                     "qwen2moe)", c.arch_name));
  }
  if (c.n_expert_used < 1 || c.n_expert_used > c.n_expert) {
    return invalid_argument(fmt::format("'{}expert_used_count' = {} must be 1 to expert_count ({})", p,
                                        c.n_expert_used, c.n_expert));
  }
  c.norm_expert_weights = !qwen;
  return ok_status();
}

// The experts' FFN widths, once feed_forward_length is read: Mixtral's experts are
// that wide; Qwen2-MoE's have keys of their own (or llama.cpp's fallbacks).
Status read_expert_widths(const GgufFile& f, const std::string& p, ModelConfig& c) {
  if (!c.moe()) return ok_status();
  c.n_ff_exp = c.n_ff;
  if (c.arch == Architecture::kQwen2Moe) {
    LLMS_ASSIGN_OR_RETURN(c.n_ff_exp, get_dim_or(f, p + "expert_feed_forward_length", c.n_ff / c.n_expert_used));
    LLMS_ASSIGN_OR_RETURN(c.n_ff_shexp, get_dim_or(f, p + "expert_shared_feed_forward_length", c.n_ff));
  }
  return ok_status();
}

}  // namespace

Result<ModelConfig> ModelConfig::from_gguf(const GgufFile& f) {
  ModelConfig c;
  LLMS_ASSIGN_OR_RETURN(c.arch_name, f.get_string("general.architecture"));
  if (c.arch_name == "llama" || c.arch_name == "mistral") {
    c.arch = Architecture::kLlama;
    c.rope_style = RopeStyle::kNormal;
  } else if (c.arch_name == "qwen2") {
    c.arch = Architecture::kQwen2;
    c.rope_style = RopeStyle::kNeox;
  } else if (c.arch_name == "qwen2moe") {
    c.arch = Architecture::kQwen2Moe;
    c.rope_style = RopeStyle::kNeox;
  } else if (c.arch_name == "phi3") {
    c.arch = Architecture::kPhi3;
    c.rope_style = RopeStyle::kNeox;
  } else if (c.arch_name == "gemma2") {
    c.arch = Architecture::kGemma2;
    c.rope_style = RopeStyle::kNeox;
    c.ffn = FfnKind::kGeGlu;
    c.scale_embedding = true;
  } else if (c.arch_name == "gpt2") {
    c.arch = Architecture::kGpt2;
    c.norm = NormKind::kLayer;
    c.ffn = FfnKind::kGelu;
    c.learned_positions = true;
  } else {
    return unimplemented(
        fmt::format("architecture '{}' is not supported (supported: llama, mistral, qwen2, qwen2moe, phi3, gemma2, gpt2)", c.arch_name));
  }
  const std::string p = c.arch_name + ".";
  LLMS_RETURN_IF_ERROR(read_experts(f, p, c));
  LLMS_ASSIGN_OR_RETURN(c.name, f.get_string_or("general.name", f.path()));
  LLMS_ASSIGN_OR_RETURN(c.n_embd, get_dim(f, p + "embedding_length"));
  LLMS_ASSIGN_OR_RETURN(c.n_layer, get_dim(f, p + "block_count"));
  LLMS_ASSIGN_OR_RETURN(c.n_head, get_dim(f, p + "attention.head_count"));
  LLMS_ASSIGN_OR_RETURN(c.n_head_kv, get_dim_or(f, p + "attention.head_count_kv", c.n_head));
  LLMS_ASSIGN_OR_RETURN(c.n_ff, get_dim(f, p + "feed_forward_length"));
  LLMS_ASSIGN_OR_RETURN(c.n_ctx_train, get_dim_or(f, p + "context_length", 2048));
  LLMS_RETURN_IF_ERROR(read_expert_widths(f, p, c));
  if (c.n_embd % c.n_head != 0 && !f.has(p + "attention.key_length")) {
    return invalid_argument(fmt::format("embedding length {} is not a multiple of the head count {}", c.n_embd, c.n_head));
  }
  LLMS_ASSIGN_OR_RETURN(c.head_dim, get_dim_or(f, p + "attention.key_length", c.n_embd / c.n_head));
  LLMS_ASSIGN_OR_RETURN(int v_len, get_dim_or(f, p + "attention.value_length", c.head_dim));
  if (v_len != c.head_dim) return unimplemented("models whose key and value head sizes differ are not supported");
  if (c.n_head % c.n_head_kv != 0) {
    return invalid_argument(fmt::format("head count {} is not a multiple of the KV head count {}", c.n_head, c.n_head_kv));
  }
  LLMS_ASSIGN_OR_RETURN(c.rope_dim, get_dim_or(f, p + "rope.dimension_count", c.head_dim));
  if (c.learned_positions) c.rope_dim = 0;
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) {
    return invalid_argument(fmt::format("RoPE dimension {} must be even and at most the head size {}", c.rope_dim,
                                        c.head_dim));
  }
  LLMS_ASSIGN_OR_RETURN(double base, f.get_float_or(p + "rope.freq_base", 10000.0));
  const std::string eps_key = c.norm == NormKind::kRms ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon";
  LLMS_ASSIGN_OR_RETURN(double eps, f.get_float_or(p + eps_key, 1e-5));
  if (!(base > 1.0) || !(eps > 0.0) || eps > 1.0) {
    return invalid_argument(fmt::format("RoPE base {} or norm epsilon {} ('{}{}') is out of range", base, eps, p, eps_key));
  }
  c.rope_base = static_cast<float>(base);
  LLMS_ASSIGN_OR_RETURN(c.n_ctx_orig, get_dim_or(f, p + "rope.scaling.original_context_length", c.n_ctx_train));
  LLMS_ASSIGN_OR_RETURN(double attn_factor, f.get_float_or(p + "rope.scaling.attn_factor", 1.0));
  if (!(attn_factor > 0.0) || attn_factor > 16.0) {
    return invalid_argument(fmt::format("'{}rope.scaling.attn_factor' = {} is out of range (0, 16]", p, attn_factor));
  }
  c.rope_attn_factor = static_cast<float>(attn_factor);
  LLMS_ASSIGN_OR_RETURN(std::string scaling, f.get_string_or(p + "rope.scaling.type", "none"));
  if (scaling == "linear" || scaling == "yarn") {
    LLMS_ASSIGN_OR_RETURN(double factor, f.get_float_or(p + "rope.scaling.factor", 1.0));
    if (!(factor >= 1.0) || factor > 1024.0) {
      return invalid_argument(fmt::format("'{}rope.scaling.factor' = {} is out of range [1, 1024]", p, factor));
    }
    c.rope_freq_scale = static_cast<float>(1.0 / factor);
  } else if (scaling != "none" && scaling != "longrope") {
    return unimplemented(fmt::format("RoPE scaling '{}' ('{}rope.scaling.type') is not supported (supported: none, "
                                     "linear, yarn, longrope)", scaling, p));
  }
  if (scaling == "yarn" && c.rope_freq_scale < 1.0f) {
    // The ramp's ends and the magnitude correction, as the YaRN paper and llama.cpp.
    c.yarn_ext_factor = 1.0f;
    c.rope_attn_factor *= 1.0f + 0.1f * std::log(1.0f / c.rope_freq_scale);
    if (c.rope_dim != c.head_dim) {
      return unimplemented("YaRN with RoPE on part of each head is not supported (its magnitude correction "
                           "would reach the unrotated dimensions)");
    }
  }
  LLMS_ASSIGN_OR_RETURN(c.sliding_window, get_dim_or(f, p + "attention.sliding_window", 0));
  if (c.sliding_window > 0 && c.sliding_window < c.n_ctx_train) {
    if (c.arch == Architecture::kGemma2) c.window_period = 2;
    if (c.arch == Architecture::kPhi3) c.window_period = 1;
  }
  LLMS_ASSIGN_OR_RETURN(double attn_cap, f.get_float_or(p + "attn_logit_softcapping", 0.0));
  LLMS_ASSIGN_OR_RETURN(double final_cap, f.get_float_or(p + "final_logit_softcapping", 0.0));
  if (attn_cap < 0.0 || final_cap < 0.0 || !std::isfinite(attn_cap) || !std::isfinite(final_cap)) {
    return invalid_argument(fmt::format("soft-capping {} / {} ('{}attn_logit_softcapping', "
                                        "'{}final_logit_softcapping') must be positive", attn_cap, final_cap, p, p));
  }
  c.attn_softcap = static_cast<float>(attn_cap);
  c.attn_scale_dim = c.arch == Architecture::kGemma2 && c.n_layer == 46 ? c.n_embd / c.n_head : c.head_dim;
  c.final_softcap = static_cast<float>(final_cap);
  c.rms_eps = static_cast<float>(eps);
  LLMS_ASSIGN_OR_RETURN(c.synthetic, f.get_bool_or(kSyntheticKey, false));

  // Vocabulary size: explicit key, else the embedding table's row count.
  const GgufTensorInfo* emb = f.find_tensor("token_embd.weight");
  if (emb == nullptr) return not_found("tensor 'token_embd.weight' is missing");
  if (emb->n_dims != 2 || emb->ne[1] > std::numeric_limits<int>::max()) {
    return invalid_argument("tensor 'token_embd.weight' must be a [n_embd, n_vocab] matrix");
  }
  c.n_vocab = static_cast<int>(emb->ne[1]);
  if (f.has(p + "vocab_size")) {
    LLMS_ASSIGN_OR_RETURN(int nv, get_dim(f, p + "vocab_size"));
    if (nv != c.n_vocab) {
      return invalid_argument(fmt::format("'{}vocab_size' = {} but token_embd.weight has {} rows", p, nv, c.n_vocab));
    }
  }
  return c;
}

}  // namespace llms
