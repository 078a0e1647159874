// LoraAdapter: a LoRA adapter bound to one base model: for each adapted matrix of each
// layer, its factors in the kernels' layout (kernels/lora.h) and its scale. A forward
// pass applies it to the tokens of the chunks that name it (SequenceChunk::adapter):
// y = W x + scale * B (A x) for each adapted W, the chunks of different adapters (and
// of none) in one pass, grouped by adapter (Model::forward).
//
// Adaptable: the attention projections (attn_q, attn_k, attn_v, attn_output) and the
// dense FFN's (ffn_gate, ffn_up, ffn_down) of architectures with separate Q/K/V
// matrices; an adapter for any other tensor, or one whose shapes differ from the
// base's, is an error naming it.
//
// Thread-safety: immutable after load; a pass reads it from the kernel threads.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "base/hash.h"
#include "base/status.h"
#include "io/lora_file.h"
#include "kernels/lora.h"

namespace llms {

class Model;

enum class LoraTarget { kQ, kK, kV, kO, kGate, kUp, kDown };
inline constexpr int kNumLoraTargets = 7;
// The target of a product named as Model::products names them ("attn_q"); -1 if none.
int lora_target_of(std::string_view what);

class LoraAdapter {
 public:
  // Reads `path` (a GGUF adapter or a PEFT directory) for `base`; `scale` multiplies
  // the file's own (alpha / rank), as llama-server's --lora-scaled does.
  static Result<std::unique_ptr<LoraAdapter>> load(const std::string& path, const Model& base, float scale = 1.0f);
  static Result<std::unique_ptr<LoraAdapter>> from_file(const LoraFile& file, const Model& base, float scale = 1.0f);

  // The factors of `target` in `layer`; null where the adapter leaves it alone.
  const LoraFactors* factors(int layer, LoraTarget target) const {
    const LoraFactors& f = layers_[static_cast<size_t>(layer)][static_cast<size_t>(target)];
    return f.rank > 0 ? &f : nullptr;
  }
  // The base model's identity (Model::identity()) it was bound to.
  Hash128 base_identity() const { return base_identity_; }
  // Of the factors' values and scales: keys caches (KV prefixes, results).
  Hash128 identity() const { return identity_; }
  // Memory held by the factors.
  int64_t bytes() const { return bytes_; }
  int64_t max_rank() const { return max_rank_; }
  int num_matrices() const { return num_matrices_; }
  const std::string& path() const { return path_; }
  // What requests call it (the server's NAME); set once, before the adapter is shared.
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

 private:
  LoraAdapter() = default;

  std::vector<std::array<LoraFactors, kNumLoraTargets>> layers_;  // rank 0: not adapted
  std::vector<std::vector<float>> storage_;                      // what F32 factors point into
  std::vector<std::vector<uint16_t>> storage_f16_;               // what F16 factors point into
  Hash128 base_identity_, identity_;
  int64_t bytes_ = 0, max_rank_ = 0;
  int num_matrices_ = 0;
  std::string path_;
  std::string name_;
};

}  // namespace llms
