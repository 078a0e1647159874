// Low-rank adapter products (LoRA) for a batch that mixes adapters: for each adapted
// matrix W and each adapter, y[t] += scale * B (A x[t]) over the tokens t of that
// adapter, after the base product y = W x of the whole batch (S-LoRA and Punica's
// "gather by adapter, two thin products"). A task is one adapter's factors of one
// matrix and the token rows that use them; the tasks of a product share its input x.
//
// Arithmetic, on every target and in lora_reference() (so bit for bit equal):
//   h[j] = fma chain over the columns c ascending of A[j, c] * x[t, c], from 0;
//   y[t, o] = y[t, o] + scale * (fma chain over j ascending of B[o, j] * h[j], from 0).
// A token's result depends on nothing but its own row, so batches stay invariant
// (the base matmul's promise, matmul.h, extends to adapters).
// Threading: tiles of tokens are split across the pool; call from one thread.
#pragma once

#include <cstdint>
#include <span>

#include "base/thread_pool.h"

namespace llms {

// Ranks are padded to this (lanes of a vector) in the packed A.
inline constexpr int64_t kLoraRankAlign = 16;
// The largest rank an adapter may have (vLLM's largest max_lora_rank).
inline constexpr int64_t kMaxLoraRank = 512;

// One adapted matrix's factors in the kernels' layout (built by the adapter loader):
// A transposed so that a column of A is one vector of ranks, B transposed so that
// a rank's outputs are contiguous; in F32, or in F16 (half the bytes a step reads,
// the same arithmetic once widened). Non-owning.
struct LoraFactors {
  const float* at = nullptr;  // [cols, rank_stride]: at[c * rank_stride + j] = A[j, c]; ranks past `rank` are 0
  const float* bt = nullptr;  // [rank, rows]: bt[j * rows + o] = B[o, j]
  int64_t rank = 0;
  int64_t rank_stride = 0;    // rank rounded up to kLoraRankAlign
  int64_t cols = 0;           // the base matrix's input size
  int64_t rows = 0;           // its output size
  float scale = 1.0f;
  // Set instead of at and bt where the factors are F16 (the same layouts).
  const uint16_t* at_f16 = nullptr;
  const uint16_t* bt_f16 = nullptr;

  float a(int64_t c, int64_t j) const;  // A[j, c] whichever the type
  float b(int64_t j, int64_t o) const;  // B[o, j]
};

struct LoraTask {
  const LoraFactors* f = nullptr;
  std::span<const int32_t> tokens;  // rows of x and y this adapter applies to
  float* y = nullptr;               // [n, f->rows], the base product's output
};

// Adds each task's low-rank product to its y; x is [n, cols] (every task's cols).
void lora_add(std::span<const LoraTask> tasks, const float* x, ThreadPool& pool);

// The scalar reference of one task (the arithmetic above, one token at a time).
void lora_reference(const LoraTask& task, const float* x);

}  // namespace llms
