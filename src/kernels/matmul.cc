#include "kernels/matmul.h"

#include <vector>

#include "quant/row_convert.h"

namespace llms {

bool matmul_supports(DType type) { return can_dequantize(type); }

void matmul_reference(const WeightMatrix& w, const float* x, int64_t n, float* y) {
  const int64_t rows = w.rows(), cols = w.cols();
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(w.dtype(), w.row(r), row.data(), cols);
    for (int64_t t = 0; t < n; ++t) {
      const float* xt = x + t * cols;
      float sum = 0.0f;
      for (int64_t c = 0; c < cols; ++c) sum += row[c] * xt[c];
      y[t * rows + r] = sum;
    }
  }
}

void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool) {
  const int64_t rows = w.rows(), cols = w.cols();
  pool.parallel_for(rows, 16, 64, [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; ++r) {
      dequantize_row(w.dtype(), w.row(r), row.data(), cols);
      for (int64_t t = 0; t < n; ++t) {
        const float* xt = x + t * cols;
        float sum = 0.0f;
        for (int64_t c = 0; c < cols; ++c) sum += row[c] * xt[c];
        y[t * rows + r] = sum;
      }
    }
  });
}

}  // namespace llms
