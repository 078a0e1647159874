// The bench's block-sparse Q8_0 GEMV against its scalar reference and against the
// exact product of the dequantized values.
#include "sparse_gemv.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/random.h"
#include "quant/half.h"
#include "quant/row_convert.h"

namespace llms::bench {
namespace {

TEST(SparseGemvTest, Avx2MatchesReferenceAndExactProduct) {
  if (!sparse_gemv_avx2_available()) GTEST_SKIP() << "needs AVX2, FMA and F16C";
  const int64_t rows = 37, cols = 32 * 70;  // 70 blocks: two bitmap words
  Rng rng(5);
  for (double keep : {1.0, 0.5, 0.1, 0.0}) {
    std::vector<float> w(static_cast<size_t>(rows * cols)), x(static_cast<size_t>(cols));
    for (auto& v : x) v = static_cast<float>(rng.normal());
    int64_t kept = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t b = 0; b < cols / 32; ++b) {
        const bool on = rng.uniform() < keep && r != 3;  // row 3 all zero
        kept += on;
        for (int i = 0; i < 32; ++i) w[r * cols + b * 32 + i] = on ? static_cast<float>(rng.normal()) : 0.0f;
      }
    }
    const int64_t rb = dtype_row_bytes(DType::kQ8_0, cols);
    std::vector<uint8_t> q8(static_cast<size_t>(rb * rows));
    for (int64_t r = 0; r < rows; ++r) quantize_row(DType::kQ8_0, w.data() + r * cols, q8.data() + r * rb, cols);
    const SparseQ8Matrix m = sparse_from_q8_0(q8.data(), rows, cols);
    EXPECT_EQ(static_cast<int64_t>(m.d.size()), kept);
    Q8Activations xq;
    quantize_activations(x.data(), cols, xq);
    std::vector<float> ref(static_cast<size_t>(rows)), simd(ref.size()), deq(static_cast<size_t>(cols));
    sparse_gemv_reference(m, xq, ref.data());
    sparse_gemv_avx2(m, xq, simd.data());
    for (int64_t r = 0; r < rows; ++r) {
      // Exact: the dequantized weights times the dequantized activations, in double.
      dequantize_row(DType::kQ8_0, q8.data() + r * rb, deq.data(), cols);
      double exact = 0, mag = 0;
      for (int64_t c = 0; c < cols; ++c) {
        const double xv = static_cast<double>(xq.d[c / 32]) * xq.q[c];
        exact += deq[c] * xv;
        mag += std::fabs(deq[c] * xv);
      }
      EXPECT_NEAR(ref[r], exact, 1e-5 * mag + 1e-30) << "keep " << keep << " row " << r;
      EXPECT_NEAR(simd[r], ref[r], 1e-5 * mag + 1e-30) << "keep " << keep << " row " << r;
      if (r == 3) {
        EXPECT_EQ(simd[r], 0.0f);
      }
    }
  }
}

}  // namespace
}  // namespace llms::bench
