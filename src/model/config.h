// ModelConfig: the hyperparameters of a model, read from GGUF metadata
// (`<arch>.*` keys) and checked for consistency before any weight is touched.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "io/gguf_file.h"
#include "kernels/ops.h"

namespace llms {

enum class Architecture {
  kLlama,  // LLaMA-1/2/3, TinyLlama, Mistral (RMSNorm, RoPE, GQA, SwiGLU)
  kQwen2,  // LLaMA layout plus QKV biases and NeoX RoPE
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
  float rms_eps = 1e-5f;
  RopeStyle rope_style = RopeStyle::kNormal;
  bool synthetic = false;  // random weights from `make-model`: speed tests only

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }

  static Result<ModelConfig> from_gguf(const GgufFile& file);
};

// Metadata key that marks a model whose weights are random (written by make-model).
inline constexpr const char* kSyntheticKey = "llmserve.synthetic";

}  // namespace llms
