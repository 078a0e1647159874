// Magnitude pruning behind `llmserve prune`: zeroes the smallest-magnitude weights of
// every linear layer's weight matrix (attention q/k/v/qkv/output, FFN gate/up/down and
// their expert and shared-expert forms) and writes a GGUF with the same metadata and
// tensor types. Embeddings, norms, biases, expert routers and the output head are left
// alone: the embedding and head hold one row per vocabulary entry (pruning them removes
// parts of particular tokens, not shared capacity), quantization already finds them the
// most sensitive, and the LLM pruning methods (SparseGPT, Wanda) leave them dense too.
//
// Patterns, all per row of the matrix (a row = the weights one output reads, ne[0]):
//   unstructured  zero the round(S * cols) smallest |w| of the row;
//   2:4           in each group of 4 consecutive inputs zero the 2 smallest |w|
//                 (S is 50% by definition);
//   block:N       zero the round(S * cols / N) N-wide blocks of the row with the
//                 smallest L2 norm (N must divide the row width).
// Ties are broken by position: of equal magnitudes the earlier one is zeroed first,
// so a file prunes the same way on every machine.
//
// Quantized tensors are dequantized, pruned and requantized to the same type. The float
// types keep every kept weight exactly. With unstructured and 2:4 pruning the largest
// weight of a quantization block that keeps anything is kept, so Q8_0 and Q4_0 get the
// same scales back and kept weights decode unchanged (tested); with block:N a pruned
// N-block can hold the quantization block's largest value, and types that search their
// scales (k-quants) search again, so there kept weights may move within the rounding. A row with
// nothing to zero keeps its bytes, so S = 0 writes every tensor bit-identical.
//
// Thread-safety: pure functions; prune_model() uses its own thread pool.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"

namespace llms {

enum class PrunePattern { kUnstructured, kTwoFour, kBlock };

struct PruneSpec {
  PrunePattern pattern = PrunePattern::kUnstructured;
  int block = 0;  // N of block:N
};

// "unstructured", "2:4" or "block:N" (N >= 1).
Result<PruneSpec> parse_prune_pattern(const std::string& text);
std::string prune_pattern_name(const PruneSpec& spec);

// uniform: every layer at S. depth: the seeds' depth rule (001 §3.1 scales the
// quantization error tolerance by layer depth / total depth) applied to sparsity:
// layer l (from 1) at S * l / mean(l), i.e. rising linearly with depth and averaging S
// over the layers; a layer above kMaxLayerSparsity is held there and the excess spread
// over the shallower layers in the same proportion, so the mean stays S.
enum class SparsitySchedule { kUniform, kDepth };
Result<SparsitySchedule> parse_sparsity_schedule(const std::string& text);
inline constexpr double kMaxLayerSparsity = 0.95;

// Target sparsity of each of `num_layers` layers (every layer has the same matrices,
// so the mean over layers is the mean over their weights).
std::vector<double> layer_sparsities(double sparsity, int num_layers, SparsitySchedule schedule);

// True for the linear-layer weight matrices prune touches ("blk.N.attn_q.weight", ...).
bool is_prunable_tensor(const std::string& name);

// Zeroes the weights of row[0..n) that `spec` selects at `sparsity` (for 2:4 the
// sparsity is ignored); returns how many it zeroed (already-zero ones included).
// n must be a multiple of 4 for 2:4 and of spec.block for block:N (CHECKed; prune_model
// validates files first).
int64_t prune_row(float* row, int64_t n, double sparsity, const PruneSpec& spec);

struct PruneOptions {
  std::optional<double> sparsity;  // required but for 2:4, where it may only be 0.5
  PruneSpec pattern;
  SparsitySchedule schedule = SparsitySchedule::kUniform;
  int threads = 0;
};

struct TensorPruneReport {
  std::string name;
  DType type = DType::kF32;
  int layer = -1;
  double target = 0;    // the schedule's sparsity for this tensor
  double achieved = 0;  // zeros / elements
  int64_t zeros = 0;    // exact zeros in the written tensor (decoded)
  int64_t elements = 0;
};

struct PruneReport {
  std::vector<TensorPruneReport> tensors;  // the pruned ones, in file order
  int64_t pruned_elements = 0;             // of those tensors
  int64_t zero_elements = 0;               // among them, after pruning
  int64_t total_elements = 0;              // of the whole model
};

// Checks everything (options, the input file, every prunable tensor's type and row
// width against the pattern) before writing; on any error nothing is written.
// The output gets llmserve.prune.{pattern,sparsity,schedule} keys besides the input's.
Result<PruneReport> prune_model(const std::string& in_path, const std::string& out_path, const PruneOptions& options);

}  // namespace llms
