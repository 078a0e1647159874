// ModelConfig: the hyperparameters of a model, read from GGUF metadata
// (`<arch>.*` keys) and checked for consistency before any weight is touched.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "io/gguf_file.h"
#include "kernels/ops.h"

namespace llms {

enum class Architecture {
  kLlama,  // LLaMA-1/2/3, TinyLlama, Mistral (RMSNorm, RoPE, GQA, SwiGLU)
  kQwen2,  // LLaMA layout plus QKV biases and NeoX RoPE
  kGpt2,   // learned positions, LayerNorm with bias, fused QKV with biases, GELU MLP
  kPhi3,   // LLaMA layout with fused QKV and gate/up, NeoX RoPE with LongRoPE factors
  kGemma2, // scaled embedding, GELU-gated FFN, pre and post norms, soft-capped logits
  kQwen2Moe,  // Qwen2 attention, a mixture of experts plus a gated shared expert
};

// How the residual stream is normalised before attention, the FFN and the head.
enum class NormKind {
  kRms,    // x / rms(x) * w                      (LLaMA family)
  kLayer,  // (x - mean) / std(x) * w + b         (GPT-2)
};

// The feed-forward block.
enum class FfnKind {
  kSwiGlu,  // down(silu(gate x) * up x)          (LLaMA family)
  kGelu,    // down(gelu(up x + b) ) + b          (GPT-2)
  kGeGlu,   // down(gelu(gate x) * up x)          (Gemma-2)
};

struct ModelConfig {
  std::string arch_name;  // general.architecture
  Architecture arch = Architecture::kLlama;
  std::string name;       // general.name, or the file name
  int n_vocab = 0;
  int n_embd = 0;
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  int n_ff = 0;
  int n_ctx_train = 0;
  int rope_dim = 0;
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;   // the norm's epsilon (RMSNorm or LayerNorm)
  RopeStyle rope_style = RopeStyle::kNormal;
  NormKind norm = NormKind::kRms;
  FfnKind ffn = FfnKind::kSwiGlu;
  // Absolute positions from a learned table of n_ctx_train rows instead of RoPE
  // (rope_dim is 0); no position at or past n_ctx_train can be computed.
  bool learned_positions = false;
  // RoPE scaling: the context the rotation was trained on (LongRoPE picks its long
  // factors past it) and the factor on cos/sin (`rope.scaling.attn_factor`), which
  // scales every attention score by its square.
  int n_ctx_orig = 0;
  float rope_attn_factor = 1.0f;
  float rope_freq_scale = 1.0f;  // linear scaling and YaRN: positions times this
  // YaRN (`rope.scaling.type = yarn`): each frequency mixes its scaled and unscaled
  // values by a ramp over the dimensions whose wavelengths lie between n_ctx_orig /
  // beta_fast and n_ctx_orig / beta_slow turns, and cos and sin are multiplied by
  // 1 + 0.1 ln(factor) (folded into rope_attn_factor). 0: no YaRN.
  float yarn_ext_factor = 0.0f;
  float yarn_beta_fast = 32.0f, yarn_beta_slow = 1.0f;
  // Sliding-window attention (`attention.sliding_window`), 0 if none: a query at p sees
  // keys [p - window + 1, p]. Gemma-2 computes it on its local layers (the even ones, as
  // llama.cpp and the reference code), Phi-3 (the 4k files' 2047) on every layer; other
  // architectures that name a window hold their sequences within it instead, where
  // attention is exact.
  int sliding_window = 0;
  int window_period = 0;  // the window is computed on layers l % period == 0 (0: not computed)
  // Gemma-2: the embedding times sqrt(n_embd); attention scores and final logits
  // soft-capped as cap * tanh(x / cap) (0: not capped).
  bool scale_embedding = false;
  // The size whose square root divides the attention scores: head_dim, except for
  // Gemma-2 27B (46 layers), which was trained with n_embd / n_head.
  int attn_scale_dim = 0;
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;
  // Mixture of experts (`expert_count` > 0): each token's FFN is the weighted sum of
  // the n_expert_used experts (SwiGLU, n_ff_exp wide) its router ranks highest, by
  // the softmax over all n_expert router logits. Mixtral renormalises the chosen
  // weights to sum to 1 (a softmax over the chosen); Qwen2-MoE keeps them as they
  // are and adds a shared expert (n_ff_shexp wide) gated by sigmoid(w . x).
  int n_expert = 0;
  int n_expert_used = 0;
  int n_ff_exp = 0;
  int n_ff_shexp = 0;
  bool norm_expert_weights = false;
  bool synthetic = false;  // random weights from `make-model`: speed tests only

  bool moe() const { return n_expert > 0; }
  // The widest FFN hidden row a token computes (dense, one expert or the shared one).
  int ffn_width() const { return std::max({n_ff, n_ff_exp, n_ff_shexp}); }
  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }
  // The most positions a sequence may have (0: no limit from the model itself).
  int max_positions() const {
    if (learned_positions) return n_ctx_train;
    return window_period == 0 && sliding_window > 0 && sliding_window < n_ctx_train ? sliding_window : 0;
  }
  // The window layer `l` attends within (0: all positions).
  int window_of(int l) const { return window_period > 0 && l % window_period == 0 ? sliding_window : 0; }

  static Result<ModelConfig> from_gguf(const GgufFile& file);
};

// Metadata key that marks a model whose weights are random (written by make-model).
inline constexpr const char* kSyntheticKey = "llmserve.synthetic";

}  // namespace llms
