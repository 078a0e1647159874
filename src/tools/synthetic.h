// Synthetic models: GGUF files of real shapes filled with seeded random weights, for
// honest speed measurement without downloading models. They carry a byte-fallback
// SentencePiece vocabulary so text goes in and out, and are marked
// `llmserve.synthetic = true` so every tool can say the weights are random.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "io/gguf_writer.h"
#include "tensor/dtype.h"

namespace llms {

struct SyntheticSpec {
  std::string preset = "custom";
  // llama, qwen2 (QKV biases, NeoX RoPE), qwen2moe, phi3, gemma2 or gpt2 (n_head_kv = n_head)
  std::string arch = "llama";
  int n_vocab = 512;
  int n_embd = 64;
  int n_layer = 2;
  int n_head = 4;
  int n_head_kv = 2;
  int n_ff = 128;
  int head_dim = 0;  // 0: n_embd / n_head (gemma2 presets set their own)
  // Mixture of experts (llama as Mixtral, qwen2moe): n_expert experts of n_ff_exp
  // (0: n_ff), n_expert_used per token; qwen2moe's shared expert is n_ff_shexp wide
  // (0: n_ff). The router stays F32 whatever the weight type, as llama.cpp's
  // quantizer leaves it.
  int n_expert = 0, n_expert_used = 0, n_ff_exp = 0, n_ff_shexp = 0;
  float attn_softcap = 50.0f, final_softcap = 30.0f;  // gemma2's soft caps
  int n_ctx = 2048;
  float rope_base = 10000.0f;
  bool tied_output = false;
  // gemma2: its window (0: the context, at most 4096, as the 2B's); phi3: its window
  // (0: the context, as the 128k files; the 4k ones have 2047); llama: Mistral's
  // window (0: none)
  int sliding_window = 0;
  // RoPE scaling (llama and qwen2): "none", "linear" (rope.scaling.factor 4), "yarn"
  // (factor 4 over an original context of n_ctx / 4) or "llama3" (Llama-3.1's
  // frequency divisors as a rope_freqs.weight tensor)
  std::string rope_scaling = "none";
  // llama and qwen2: the small embedding and larger layer matrices of the gpt2 and phi3
  // models (std 0.14 and 0.04, not 1 and 0.02), so that what attention adds (RoPE)
  // shows in the logits rather than the embedding alone.
  bool strong_layers = false;
  DType weight_type = DType::kF32;  // matrices; norms and biases stay F32
  uint64_t seed = 1;

  int head_size() const { return head_dim > 0 ? head_dim : n_embd / n_head; }
  int expert_ffn() const { return n_ff_exp > 0 ? n_ff_exp : n_ff; }
  int shared_ffn() const { return n_ff_shexp > 0 ? n_ff_shexp : n_ff; }
  Status validate() const;
};

// Names accepted by synthetic_preset().
std::vector<std::string> synthetic_preset_names();
// tiny, llama-110m, tinyllama-1.1b, llama-7b, gpt2-small, gpt2-large, phi3-mini,
// gemma2-2b, mixtral-8x7b, qwen2moe-a2.7b; NOT_FOUND lists the valid names.
Result<SyntheticSpec> synthetic_preset(std::string_view name);

Status write_synthetic_model(const SyntheticSpec& spec, const std::string& path);
// The same model as a Hugging Face directory (io/hf_export.h): the GGUF that
// write_synthetic_model() writes, in the directory's names and layouts.
Status write_synthetic_hf_model(const SyntheticSpec& spec, const std::string& dir);

// The vocabulary written into synthetic models: <unk> <s> </s>, 256 byte tokens,
// then word pieces closed under prefixes (so SentencePiece merges reach them), then
// unused fillers up to n_vocab. n_vocab must be at least 259.
SpmVocabulary make_synthetic_vocab(int n_vocab);

}  // namespace llms
