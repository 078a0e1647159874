// Importance of every weight's input channel, the data behind `quantize --imatrix`:
// for each linear layer (by weight tensor name), the sum of the squared activations
// of each input channel over a calibration text and the number of tokens summed.
// `llmserve imatrix` writes it; the quantizer weighs each weight's rounding error by
// its channel's mean squared activation, the expected squared error it adds to the
// layer's output.
//
// Files read (the format is told by content, not by name):
//   * GGUF, ours and llama.cpp's (llama-imatrix's default since mid-2025; the same
//     layout): general.type "imatrix", per weight tensor NAME two F32 tensors
//     NAME.in_sum2 [cols] or [cols, n_expert] (sums of x^2) and NAME.counts [1] or
//     [1, n_expert] (tokens); metadata imatrix.datasets, imatrix.chunk_count (and
//     llama.cpp's imatrix.chunk_size, not needed: counts are tokens). llama.cpp's
//     NAME.in_sum (sums of x) is ignored.
//   * llama.cpp's legacy binary file (`llama-imatrix --output-format dat` and all older
//     versions), see tools/llama_imatrix_dat.h.
// Written: GGUF, as above.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "io/gguf_file.h"

namespace llms {

struct ChannelSums {
  // [num_matrices, cols]: per input channel of each matrix the weight stacks (one, or
  // one per expert of a 3-D expert tensor, in expert order).
  std::vector<double> sum_sq;
  // Tokens summed, the same for every matrix. From a llama.cpp .dat file, which keeps
  // no token count, this is its ncall and sum_sq its stored values (mean * ncall), so
  // that sum_sq / count is still the mean squared activation.
  int64_t count = 0;
  // Or per matrix (experts see different tokens): [num_matrices]; empty: `count`.
  std::vector<int64_t> matrix_counts;
};

struct ImportanceTable {
  std::map<std::string, ChannelSums> tensors;
  std::vector<std::string> datasets;
  int64_t chunks = 0;
  std::string source;  // the file it was read from, for messages; empty when made here

  // Mean squared activation per channel of `name`, [num_matrices * cols], floored at
  // 1e-3 of the mean over all of them (a channel the text never drove still counts a
  // little); a matrix with no tokens (an expert never routed to) takes that mean for
  // every channel. Empty when the table has no entry or no tokens for it.
  std::vector<float> importance(const std::string& name) const;
  // The importance for the model's tensor `tensor`: its entry, or for a fused attn_qkv
  // with none, its Q slice's (`llmserve imatrix` names the slices; they share the input).
  std::vector<float> tensor_importance(const std::string& tensor) const;
};

Status write_importance(const ImportanceTable& table, const std::string& path);
// Reads any format above; every malformed entry is INVALID_ARGUMENT naming the file
// and the entry.
Result<ImportanceTable> read_importance(const std::string& path);

// Checks every entry against the model being quantized: it must name a matrix of
// `model` (or a slice of a fused one: attn_q/k/v of attn_qkv, ffn_gate of Phi-3's
// ffn_up), and hold cols values, or cols per matrix of a stacked (expert) tensor.
// INVALID_ARGUMENT naming the importance file and the entry otherwise: a file for
// another model would silently weigh nothing.
Status check_importance_fits(const ImportanceTable& table, const GgufFile& model);

}  // namespace llms
