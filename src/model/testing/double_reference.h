// A double-precision reference forward pass written here with plain loops over the
// GGUF tensors (no code shared with model/ or kernels/), and the check of Model::forward
// against it. Test-only (model_reference_test.cc, experts_reference_test.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/gguf_file.h"

namespace llms::reference {

using Vec = std::vector<double>;

// Reads a tensor as doubles (F32 or F16), row-major in GGUF order.
Vec read(const GgufFile& f, const std::string& name);

// The reference with confidence early exit forced (model/early_exit.h): token p runs
// exit_layer[p] blocks (n_layer or more: all); each skipped layer's key and value of p
// are that layer's K and V projections of the exited state (after its attn_norm,
// RoPE on k), and p's logits are the head's on the exited state. LLaMA family only.
struct ExitReference {
  std::vector<int> exit_layer;
  std::vector<Vec> logits;                    // [pos][n_vocab]
  std::vector<std::vector<Vec>> keys, values;  // [layer][pos][kv_dim], RoPE applied to keys
};
ExitReference reference_with_exits(const GgufFile& f, const std::vector<int32_t>& tokens,
                                   const std::vector<int>& exit_layer);

// Checks Model::forward on the file at `path` against the reference for `tokens`:
// prefill in one chunk and one token at a time through a paged cache of scattered
// blocks, every row of logits within 1e-4 of the reference's scale. `context` picks
// LongRoPE's factor set.
void check_model(const std::string& path, const std::vector<int32_t>& tokens, int context = 0);

}  // namespace llms::reference
