// TensorShard: which share of a model one rank of a tensor-parallel group holds
// (Megatron-style). Attention is split by KV head (each with its query heads), the
// FFN by hidden column (every expert's too, within the expert), the output head by
// vocabulary row; everything else (norms, the embedding tables, output biases, the
// router) is whole on every rank. Q, K, V, gate and up keep their rows of the share
// (column-parallel), attn_output and ffn_down their columns (row-parallel: their
// products are partial sums, added across ranks).
//
// Quantized columns are cut on block boundaries: a share's first column is a
// multiple of the tensor's block size (256 for k-quants), so shares are uneven where
// the width does not divide (TinyLlama's 5632 over 4 ranks: 1536, 1280, 1536, 1280).
//
// Pipeline parallelism instead gives each rank (a stage) every head and column of a
// contiguous run of layers, balanced by bytes (balance_stages()); the first stage
// also embeds, the last also runs the final norm and the output head. The two
// combine: a group of tensor × pipeline ranks is a grid, rank = stage × tensor +
// tensor rank, and each rank holds its tensor share of its stage's layers.
//
// Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "io/gguf_file.h"
#include "model/config.h"

namespace llms {

struct ShardRange {
  int64_t first = 0;
  int64_t count = 0;
};

// How a group of ranks splits a model: `tensor` ranks share each layer's heads and
// columns, the layers run in `pipeline` stages; the group has tensor × pipeline ranks.
struct Parallelism {
  int tensor = 1;
  int pipeline = 1;

  int ranks() const { return tensor * pipeline; }
  // World rank `rank`'s place in the grid.
  int stage_of(int rank) const { return rank / tensor; }
  int tensor_rank_of(int rank) const { return rank % tensor; }
  bool operator==(const Parallelism&) const = default;
};

struct TensorShard {
  int rank = 0;  // of the ranks sharing each layer (tensor parallelism)
  int size = 1;
  // Pipeline parallelism: this rank's stage of `stages` and its layers (without it:
  // stage 0 of 1, every layer).
  int stage = 0, stages = 1;
  ShardRange layers;
  ShardRange kv_heads, heads;  // of n_head_kv and n_head
  ShardRange ff, ff_exp, ff_shexp;  // hidden columns of the dense FFN, of each expert, of the shared expert
  ShardRange vocab;  // rows of the output head

  bool split() const { return size > 1; }
  bool pipelined() const { return stages > 1; }
  bool first_stage() const { return stage == 0; }
  bool last_stage() const { return stage == stages - 1; }
  // Tensor rank `rank` of `size`'s share of the model `full` read from `file` (whose
  // tensor types set the block boundaries), in stage `stage` of `stages`: the layers
  // [first, first + count) as balance_stages() cuts the file's (the output head
  // counted with the last). INVALID_ARGUMENT when some rank would get no head or no
  // column, or there are fewer layers than stages, naming the limit.
  static Result<TensorShard> plan(const GgufFile& file, const ModelConfig& full, int rank, int size, int stage = 0,
                                  int stages = 1);
  // `full` with this share's head counts and FFN widths (n_vocab stays whole: the
  // logits are gathered whole on rank 0).
  ModelConfig local_config(const ModelConfig& full) const;
  // Every rank's count of output-head rows, in rank order (the logits' gather).
  std::vector<int64_t> vocab_counts() const { return vocab_counts_; }

 private:
  std::vector<int64_t> vocab_counts_;
};

// parts + 1 boundaries 0 = b[0] < b[1] < ... < b[parts] = units, each a multiple of
// `step` (but the last), each as close to an even split as the steps allow;
// INVALID_ARGUMENT when there are too few steps for every part to get one.
Result<std::vector<int64_t>> split_points(int64_t units, int64_t step, int parts);

// stages + 1 layer boundaries 0 = b[0] < ... < b[stages] = layers: contiguous runs of
// at least one layer whose largest byte count (the last run's plus `tail_bytes`, the
// output head) is as small as it can be. INVALID_ARGUMENT with fewer layers than stages.
Result<std::vector<int>> balance_stages(std::span<const int64_t> layer_bytes, int64_t tail_bytes, int stages);

}  // namespace llms
