// An experimental block-sparse Q8_0 GEMV, kept in bench/ as the record of a
// measurement (docs/adaptive.md, "Magnitude pruning"): it did not beat the dense
// quantized kernels of src/kernels/ where it would matter, so it is not in the product
// and does not go through kernels/' dispatch. If it ever wins, it moves to kernels/.
//
// Format (what `llmserve prune --pattern block:32` makes possible for a Q8_0 matrix):
// per row a bitmap of its 32-wide blocks that are not all zero, then only those
// blocks, as Q8_0 stores them (an F16 scale and 32 int8 values). A row at sparsity S
// reads (1 - S) * 34 bytes per 32 weights plus 1 bit per block.
//
// y[r] = sum over kept blocks b of float(sum_i q_w[i] * q_x[i]) * d_w * d_x[b], with
// the activations quantized to Q8 (blocks of 32) once per call, as the dense Q8_0
// kernel does.
//
// Thread-safety: pure functions on caller-owned data; single-threaded.
#pragma once

#include <cstdint>
#include <vector>

namespace llms::bench {

struct SparseQ8Matrix {
  int64_t rows = 0, cols = 0;
  int64_t words = 0;                 // bitmap words per row: ceil(cols / 32 / 64)
  std::vector<uint64_t> bitmap;      // [rows, words]: bit b set = block b is stored
  std::vector<uint32_t> row_start;   // [rows + 1]: index of each row's first stored block
  std::vector<uint16_t> d;           // [stored blocks]: F16 scales
  std::vector<int8_t> qs;            // [stored blocks, 32]
  int64_t bytes() const {
    return static_cast<int64_t>(bitmap.size() * 8 + row_start.size() * 4 + d.size() * 2 + qs.size());
  }
};

struct Q8Activations {
  std::vector<float> d;   // [cols / 32]
  std::vector<int8_t> q;  // [cols]
};

// From Q8_0 rows (GGUF layout, [rows, cols / 32] blocks of 34 bytes): blocks whose 32
// values are all zero are dropped.
SparseQ8Matrix sparse_from_q8_0(const uint8_t* q8_0, int64_t rows, int64_t cols);
// Q8 quantization of x[0..cols) as the Q8_0 format defines it (round to nearest).
void quantize_activations(const float* x, int64_t cols, Q8Activations& out);

// Scalar reference: blocks in ascending order, float accumulation.
void sparse_gemv_reference(const SparseQ8Matrix& w, const Q8Activations& x, float* y);
// AVX2 (sign + maddubs + madd, as llama.cpp's Q8_0 dot), two accumulators.
// Requires sparse_gemv_avx2_available().
void sparse_gemv_avx2(const SparseQ8Matrix& w, const Q8Activations& x, float* y);
bool sparse_gemv_avx2_available();

}  // namespace llms::bench
