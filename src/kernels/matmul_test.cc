#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/random.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

Tensor matrix(DType type, int64_t rows, int64_t cols, const std::vector<uint8_t>& bytes) {
  Tensor t;
  t.dtype = type;
  t.n_dims = 2;
  t.ne = {cols, rows, 1, 1};
  t.data = bytes.data();
  return t;
}

TEST(MatmulTest, HandComputedF32) {
  // W = [[1, 2, 3], [4, 5, 6]], x = [1, 0, -1] and [2, 2, 2].
  const std::vector<float> w = {1, 2, 3, 4, 5, 6};
  std::vector<uint8_t> bytes(w.size() * 4);
  std::memcpy(bytes.data(), w.data(), bytes.size());
  auto wm = WeightMatrix::from_tensor(matrix(DType::kF32, 2, 3, bytes), "w");
  ASSERT_TRUE(wm.ok());
  const std::vector<float> x = {1, 0, -1, 2, 2, 2};
  std::vector<float> y(4);
  ThreadPool pool(2);
  matmul(*wm, x.data(), 2, y.data(), pool);
  EXPECT_EQ(y, (std::vector<float>{-2, -2, 12, 30}));
}

TEST(MatmulTest, MatchesReferenceForEveryFloatType) {
  ThreadPool pool(2);
  Rng rng(3);
  for (DType type : {DType::kF32, DType::kF16, DType::kBF16}) {
    const int64_t rows = 67, cols = 96, n = 5;
    std::vector<float> wf(rows * cols);
    for (auto& v : wf) v = static_cast<float>(rng.normal());
    std::vector<uint8_t> bytes(dtype_row_bytes(type, cols) * rows);
    for (int64_t r = 0; r < rows; ++r)
      quantize_row(type, wf.data() + r * cols, bytes.data() + r * dtype_row_bytes(type, cols), cols);
    auto wm = WeightMatrix::from_tensor(matrix(type, rows, cols, bytes), "w");
    ASSERT_TRUE(wm.ok()) << wm.status().to_string();
    std::vector<float> x(n * cols);
    for (auto& v : x) v = static_cast<float>(rng.normal());
    std::vector<float> y(n * rows), y_ref(n * rows), y_one(rows);
    matmul(*wm, x.data(), n, y.data(), pool);
    matmul_reference(*wm, x.data(), n, y_ref.data());
    for (int64_t i = 0; i < n * rows; ++i) ASSERT_NEAR(y[i], y_ref[i], 1e-4f * (1 + std::abs(y_ref[i]))) << i;
    // Batch independence: token 3 alone gives bit-identical results.
    matmul(*wm, x.data() + 3 * cols, 1, y_one.data(), pool);
    for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(y_one[r], y[3 * rows + r]);
  }
}

TEST(MatmulTest, UnsupportedTypeIsAClearError) {
  std::vector<uint8_t> bytes(4 * 32);
  auto wm = WeightMatrix::from_tensor(matrix(DType::kIQ2_XXS, 1, 256, bytes), "blk.0.attn_q.weight");
  ASSERT_FALSE(wm.ok());
  EXPECT_NE(wm.status().message().find("blk.0.attn_q.weight"), std::string::npos);
  EXPECT_NE(wm.status().message().find("iq2_xxs"), std::string::npos);
}

}  // namespace
}  // namespace llms
