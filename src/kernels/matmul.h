// Matrix products with a weight matrix: y[t, r] = sum_c W[r, c] * x[t, c] for the
// n tokens of a batch (n = 1 is the decode GEMV, n > 1 prefill or batched decode).
// Float weights (F32, F16, BF16) multiply float activations; integer weights (Q8_0,
// Q4_0, Q5_0, Q5_1, IQ4_NL, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS and the types converted to
// Q8_0 at load) multiply activations quantized on the fly to 8 bits (blocks of 32 for
// the simple formats, of 256 for the k-quants and IQ4_XS)
// with exact integer dot products, combined per block in float.
//
// Determinism: the value for token t is bit-identical whatever n is, whatever the
// other tokens are and however many threads the pool has, so that a request's output
// never depends on its batch. Each SIMD target has its own bits; the scalar target and
// matmul_reference() define them for all targets (exactly, since every target
// performs the same operations per output, see packed_weights.h).
// Threading: work is split over 16-row panels of W across the pool; call from one
// thread.
#pragma once

#include <cstdint>
#include <span>

#include "base/thread_pool.h"
#include "kernels/weight_matrix.h"

namespace llms {

bool matmul_supports(DType type);

// x: [n, w.cols()] row-major floats; y: [n, w.rows()].
void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool);

// Several products of the same input (Q, K and V; gate and up), y_i = W_i x, as one
// job for the pool: x is quantized once per activation format and the panels of all
// W_i are split across the threads together, saving a wake-up and a wait per product.
// Each y_i is bit-identical to matmul(W_i, x, n, y_i). The W_i have the same number
// of columns; at most 8 of them.
struct MatmulOutput {
  const WeightMatrix* w;
  float* y;  // [n, w->rows()]
};
void matmul_shared_input(std::span<const MatmulOutput> outs, const float* x, int64_t n, ThreadPool& pool);

// Scalar reference, computed from the file's GGUF rows (not the repacked ones):
// float types: acc = fma(w[c], x[c], acc) for c ascending; integer types: activations
// quantized as the kernels do, exact integer dot per block, then per block
// acc = fma(float(isum), d_w * d_x, acc) (k-quants: see matmul_q4_k-inl.h and
// matmul_q6_k-inl.h). Equal bit for bit to matmul() on every target, for every type
// (the float types too: each output is one chain of FMAs in column order).
void matmul_reference(const WeightMatrix& w, const float* x, int64_t n, float* y);

// The Q8_0 GEMM tile's block step on the active target, `rounds` times over blocks held
// in the first-level cache (no memory traffic, dispatch or activation quantization):
// the ceiling of the Q8_0 product, for benchmarks (benchprobes/machine_limits.h).
// Returns the int8 multiply-adds done.
double q8_0_tile_probe(int64_t rounds);

}  // namespace llms
