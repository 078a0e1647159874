// ModelWeights: every weight of a model (LLaMA family, Qwen2, Phi-3, GPT-2), checked
// against the config's shapes at load. Fused GGUF tensors (attn_qkv, Phi-3's gate/up
// in ffn_up) are split into their row ranges here, so the forward pass sees one
// layout. Matrices are repacked into panels (and their file pages released: the
// weights are resident once); norm and bias vectors are decoded to float copies
// (they are tiny and read every token). Only the token and position embeddings are
// read in place from the mapped file, one row per token, so just the rows in use are
// resident.
//
// Thread-safety: immutable after load.
#pragma once

#include <vector>

#include "base/status.h"
#include "io/gguf_file.h"
#include "kernels/weight_matrix.h"
#include "model/config.h"
#include "model/tensor_shard.h"

namespace llms {

// A vector that a model may lack (a bias) is empty.
struct LayerWeights {
  std::vector<float> attn_norm, attn_norm_b;  // [n_embd]; the bias with LayerNorm only
  WeightMatrix wq, wk, wv, wo;   // [q_dim, n_embd], [kv_dim, n_embd] x2, [n_embd, q_dim]
  std::vector<float> bq, bk, bv; // [q_dim], [kv_dim] x2: QKV biases (Qwen2, GPT-2)
  std::vector<float> bo;         // [n_embd]: output projection bias (GPT-2)
  std::vector<float> attn_post_norm, ffn_post_norm;  // [n_embd]: norms of the blocks' outputs (Gemma-2)
  std::vector<float> ffn_norm, ffn_norm_b;  // [n_embd]
  WeightMatrix w_gate;           // [n_ff, n_embd]; none with a GELU MLP
  WeightMatrix w_up;             // [n_ff, n_embd]
  WeightMatrix w_down;           // [n_embd, n_ff]
  std::vector<float> b_up, b_down;  // [n_ff], [n_embd]: MLP biases (GPT-2)
  // Mixture of experts: the router [n_expert, n_embd] (ffn_gate_inp) and each
  // expert's SwiGLU, slices of the file's [n_embd, n_ff_exp, n_expert] tensors
  // (ffn_gate_exps, ffn_up_exps, ffn_down_exps). Qwen2-MoE's shared expert is the
  // dense w_gate/w_up/w_down above (n_ff_shexp wide), scaled by sigmoid(shexp_gate . x).
  struct Expert {
    WeightMatrix gate, up, down;
  };
  WeightMatrix router;
  std::vector<Expert> experts;
  std::vector<float> shexp_gate;  // [n_embd]

  // The matrices every token reads (attention, and the dense or shared FFN), in order.
  std::vector<const WeightMatrix*> dense_matrices() const;
};

// What the weights take in memory.
struct WeightsMemory {
  int64_t owned_bytes = 0;   // packed panels and float vectors: anonymous memory, all resident
  int64_t mapped_bytes = 0;  // read in place from the file (the token embedding): resident as rows are read
  int64_t mapped_resident_bytes = 0;  // of the file mapping, resident now (Model::weights_memory())
};

struct ModelWeights {
  Tensor token_embd;             // [n_vocab, n_embd], any supported type
  Tensor position_embd;          // [n_ctx_train, n_embd] with learned positions; else empty
  std::vector<float> output_norm, output_norm_b;
  WeightMatrix output;           // [n_vocab, n_embd]; the embedding when tied
  // RoPE frequency divisors [rope_dim / 2], empty if none: rope_freqs (Llama-3.1's
  // scaling, always applied), or LongRoPE's short and long sets (Phi-3 128k).
  std::vector<float> rope_freqs, rope_factors_short, rope_factors_long;
  bool tied_output = false;
  std::vector<LayerWeights> layers;

  // Bytes of weights read to produce one token (every matrix once, plus one
  // embedding row; of a mixture of experts, the router and `experts_used` experts,
  // each the size of the first): the numerator of memory-bandwidth utilisation.
  int64_t bytes_per_token() const;
  // Multiply-adds of the matrix products for one token (every matrix it reads, the
  // output head included; attention's own arithmetic, which grows with the context,
  // is not).
  int64_t macs_per_token() const;
  int experts_used = 0;  // the config's n_expert_used
  WeightsMemory memory() const;

  static Result<ModelWeights> load(const GgufFile& file, const ModelConfig& config);
  // This rank's share (`config` is the whole model's; matrices cut as tensor_shard.h says).
  static Result<ModelWeights> load(const GgufFile& file, const ModelConfig& config, const TensorShard& shard);
};

}  // namespace llms
