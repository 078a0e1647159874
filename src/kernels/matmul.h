// Matrix products with a weight matrix: y[t, r] = sum_c W[r, c] * x[t, c] for the
// n tokens of a batch (n = 1 is the decode GEMV, n > 1 prefill or batched decode).
//
// Determinism: the value for token t is bit-identical whatever n is and whatever the
// other tokens are, so that a request's output never depends on its batch.
// Threading: work is split over rows of W across the pool; call from one thread.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "kernels/weight_matrix.h"

namespace llms {

bool matmul_supports(DType type);

// x: [n, w.cols()] row-major floats; y: [n, w.rows()].
void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool);

// Scalar reference: each row decoded with quant/row_convert, dot product in float,
// summed left to right. Tests compare every SIMD path with it.
void matmul_reference(const WeightMatrix& w, const float* x, int64_t n, float* y);

}  // namespace llms
