// ModelWeights: every weight of a LLaMA-family model, checked against the config's
// shapes at load. Matrices are repacked into panels (and their file pages released:
// the weights are resident once); norm and bias vectors are decoded to float copies
// (they are tiny and read every token). Only the token embedding is read in place
// from the mapped file, one row per token, so just the rows in use are resident.
//
// Thread-safety: immutable after load.
#pragma once

#include <vector>

#include "base/status.h"
#include "io/gguf_file.h"
#include "kernels/weight_matrix.h"
#include "model/config.h"

namespace llms {

struct LayerWeights {
  std::vector<float> attn_norm;  // [n_embd]
  WeightMatrix wq, wk, wv, wo;   // [q_dim, n_embd], [kv_dim, n_embd] x2, [n_embd, q_dim]
  std::vector<float> bq, bk, bv; // empty unless the model has QKV biases
  std::vector<float> ffn_norm;   // [n_embd]
  WeightMatrix w_gate, w_up;     // [n_ff, n_embd]
  WeightMatrix w_down;           // [n_embd, n_ff]
};

// What the weights take in memory.
struct WeightsMemory {
  int64_t owned_bytes = 0;   // packed panels and float vectors: anonymous memory, all resident
  int64_t mapped_bytes = 0;  // read in place from the file (the token embedding): resident as rows are read
  int64_t mapped_resident_bytes = 0;  // of the file mapping, resident now (Model::weights_memory())
};

struct ModelWeights {
  Tensor token_embd;             // [n_vocab, n_embd], any supported type
  std::vector<float> output_norm;
  WeightMatrix output;           // [n_vocab, n_embd]; the embedding when tied
  bool tied_output = false;
  std::vector<LayerWeights> layers;

  // Bytes of weights read to produce one token (every matrix once, plus one
  // embedding row): the numerator of memory-bandwidth utilisation.
  int64_t bytes_per_token() const;
  WeightsMemory memory() const;

  static Result<ModelWeights> load(const GgufFile& file, const ModelConfig& config);
};

}  // namespace llms
