#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/random.h"
#include "kernels/kernel_table.h"
#include "kernels/simd_target.h"
#include "quant/half.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

// A [rows, cols] matrix of `type` and the bytes it views.
struct TestMatrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
};

Tensor matrix_view(DType type, int64_t rows, int64_t cols, const std::vector<uint8_t>& bytes) {
  Tensor t;
  t.dtype = type;
  t.n_dims = 2;
  t.ne = {cols, rows, 1, 1};
  t.data = bytes.data();
  return t;
}

// Gaussian weights encoded with the type's quantizer.
TestMatrix quantized_matrix(DType type, int64_t rows, int64_t cols, uint64_t seed) {
  Rng rng(seed);
  TestMatrix m;
  const int64_t rb = dtype_row_bytes(type, cols);
  m.bytes.resize(static_cast<size_t>(rb * rows));
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : row) v = static_cast<float>(rng.normal());
    quantize_row(type, row.data(), m.bytes.data() + r * rb, cols);
  }
  auto w = WeightMatrix::from_tensor(matrix_view(type, rows, cols, m.bytes), "w");
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  m.w = *w;
  return m;
}

// Random bytes (every level, sign and scale a file may hold, Q8_0's -128 included),
// with the f16 scales set to small finite values.
TestMatrix random_block_matrix(DType type, int64_t rows, int64_t cols, uint64_t seed) {
  Rng rng(seed);
  TestMatrix m;
  const int64_t bs = dtype_info(type).type_size;
  m.bytes.resize(static_cast<size_t>(dtype_row_bytes(type, cols) * rows));
  for (auto& b : m.bytes) b = static_cast<uint8_t>(rng.next_u64());
  auto scale = [&](size_t offset) {
    const uint16_t h = f32_to_f16(static_cast<float>(rng.uniform() * 0.02 - 0.01));
    std::memcpy(m.bytes.data() + offset, &h, 2);
  };
  for (size_t b = 0; b < m.bytes.size(); b += static_cast<size_t>(bs)) {
    switch (type) {
      case DType::kQ2_K: scale(b + 80), scale(b + 82); break;
      case DType::kQ3_K: scale(b + 108); break;
      case DType::kQ4_K: case DType::kQ5_K: scale(b), scale(b + 2); break;
      case DType::kQ6_K: scale(b + 208); break;
      case DType::kQ4_1: case DType::kQ5_1: case DType::kQ8_1: scale(b), scale(b + 2); break;
      default: scale(b); break;  // Q4_0, Q5_0, Q8_0
    }
  }
  auto w = WeightMatrix::from_tensor(matrix_view(type, rows, cols, m.bytes), "w");
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  m.w = *w;
  return m;
}

std::vector<float> activations(int64_t n, int64_t cols, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<size_t>(n * cols));
  for (auto& v : x) v = static_cast<float>(rng.normal());
  return x;
}

// RMS of y - W x over that of W x, W x computed in double from the decoded weights
// of `type`; y is [n, rows] for a [rows, cols] matrix.
double relative_rms_error(const TestMatrix& m, DType type, const std::vector<float>& x, const std::vector<float>& y,
                          int64_t n) {
  const int64_t rows = m.w.rows(), cols = m.w.cols();
  std::vector<float> row(static_cast<size_t>(cols));
  double err = 0, norm = 0;
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(type, m.w.row(r), row.data(), cols);
    for (int64_t t = 0; t < n; ++t) {
      double exact = 0;
      for (int64_t c = 0; c < cols; ++c) exact += double(row[c]) * x[t * cols + c];
      err += (y[t * rows + r] - exact) * (y[t * rows + r] - exact);
      norm += exact * exact;
    }
  }
  return std::sqrt(err / norm);
}

// Bit-for-bit equality, with the first difference in the message.
void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(float_to_bits(got[i]), float_to_bits(want[i])) << what << " at " << i << ": " << got[i] << " vs " << want[i];
  }
}

constexpr DType kKernelTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16,   DType::kQ8_0, DType::kQ4_0,
                                  DType::kQ4_K, DType::kQ6_K, DType::kQ5_0,   DType::kQ5_1, DType::kIQ4_NL,
                                  DType::kQ5_K, DType::kIQ4_XS, DType::kQ3_K};

int64_t block_of(DType type) { return dtype_info(type).block_size; }

// Columns that are whole blocks: an odd count for the float types.
int64_t cols_for(DType type, int64_t blocks) { return block_of(type) == 1 ? 37 * blocks : block_of(type) * blocks; }

TEST(MatmulTest, HandComputedF32) {
  // W = [[1, 2, 3], [4, 5, 6]], x = [1, 0, -1] and [2, 2, 2].
  const std::vector<float> w = {1, 2, 3, 4, 5, 6};
  std::vector<uint8_t> bytes(w.size() * 4);
  std::memcpy(bytes.data(), w.data(), bytes.size());
  auto wm = WeightMatrix::from_tensor(matrix_view(DType::kF32, 2, 3, bytes), "w");
  ASSERT_TRUE(wm.ok());
  const std::vector<float> x = {1, 0, -1, 2, 2, 2};
  std::vector<float> y(4);
  ThreadPool pool(2);
  for (SimdTarget target : supported_simd_targets()) {
    ScopedSimdTarget scoped(target);
    matmul(*wm, x.data(), 2, y.data(), pool);
    EXPECT_EQ(y, (std::vector<float>{-2, -2, 12, 30})) << simd_target_name(target);
  }
}

// matmul of the first n tokens of x equals the scalar reference bit for bit on every target.
void expect_every_target_matches_reference(const TestMatrix& m, const std::vector<float>& x, int64_t n,
                                           ThreadPool& pool, const std::string& what) {
  const int64_t rows = m.w.rows();
  std::vector<float> want(static_cast<size_t>(n * rows)), got(want.size());
  matmul_reference(m.w, x.data(), n, want.data());
  for (SimdTarget target : supported_simd_targets()) {
    ScopedSimdTarget scoped(target);
    matmul(m.w, x.data(), n, got.data(), pool);
    expect_same_bits(got, want,
                     std::string(dtype_name(m.w.dtype())) + " " + simd_target_name(target) + " " + what + " n " +
                         std::to_string(n));
  }
}

// Every kernel on every target equals the scalar reference bit for bit, for rows that
// do not fill the last panel and every batch size from 1 to 17.
TEST(MatmulTest, EveryTargetMatchesReferenceExactly) {
  ThreadPool pool(2);
  for (DType type : kKernelTypes) {
    for (auto [rows, blocks] : {std::pair<int64_t, int64_t>{1, 1}, {17, 2}, {67, 3}}) {
      const int64_t cols = cols_for(type, blocks);
      const TestMatrix m = quantized_matrix(type, rows, cols, 100 + rows);
      ASSERT_EQ(m.w.kernel_dtype(), type) << "runs natively";
      const int64_t max_n = rows == 17 ? 17 : 5;
      const auto x = activations(max_n, cols, 7);
      for (int64_t n = 1; n <= max_n; ++n)
        expect_every_target_matches_reference(m, x, n, pool, "rows " + std::to_string(rows));
    }
  }
}

// A batch of 40 tokens, rows of 19 blocks (for Q8 activations a group of 16 blocks
// and a partial one), and one block of zeros (scale 0, every q 0).
TEST(MatmulTest, BatchOfFortyWithAZeroBlockMatchesReferenceExactly) {
  ThreadPool pool(2);
  for (DType type : kKernelTypes) {
    const int64_t rows = 67, cols = cols_for(type, 19), n = 40;
    const TestMatrix m = quantized_matrix(type, rows, cols, 300);
    auto x = activations(n, cols, 11);
    std::fill(x.begin() + 37 * cols + 64, x.begin() + 37 * cols + 96, 0.0f);
    expect_every_target_matches_reference(m, x, n, pool, "batch of 40");
  }
}

// Panels come in interleaved groups of kGroupPanels where the target packing them
// walks whole groups, else one after another: 19 panels make two whole groups and a
// last group of 3, split between threads; odd block counts leave a half pair. Both
// layouts, from every target's packing, on every target.
TEST(MatmulTest, PanelGroupsAndAPartialLastGroupMatchReferenceExactly) {
  ThreadPool pool(2);
  for (DType type : kKernelTypes) {
    const int64_t rows = 19 * kPanelRows - 5, cols = cols_for(type, 3);
    const auto x = activations(9, cols, 8);
    for (SimdTarget packing : supported_simd_targets()) {
      const TestMatrix m = [&] {
        ScopedSimdTarget scoped(packing);
        return quantized_matrix(type, rows, cols, 300);
      }();
      for (int64_t n : {1, 2, 9})
        expect_every_target_matches_reference(m, x, n, pool, std::string("panel groups, packed by ") + simd_target_name(packing));
    }
  }
}

TEST(MatmulTest, PairedBlocksAreInterleavedAsDocumented) {
  for (SimdTarget packing : supported_simd_targets()) {
    ScopedSimdTarget scoped(packing);
    for (DType type : {DType::kQ8_0, DType::kQ4_0, DType::kQ6_K, DType::kQ5_0, DType::kIQ4_NL, DType::kQ3_K}) {
      // An odd number of blocks: the last pair is half empty.
      const int64_t rows = 19 * kPanelRows, blocks = 5, cols = block_of(type) * blocks;
      const TestMatrix m = quantized_matrix(type, rows, cols, 5);
      const PackedWeights& pw = m.w.packed();
      const std::string what = std::string(dtype_name(type)) + " packed by " + simd_target_name(packing);
      // Interleaved where the target's GEMV walks whole groups, on AVX-512 at least.
      EXPECT_EQ(pw.interleaved, active_kernels().gemv_panels >= kGroupPanels) << what;
      if (packing == SimdTarget::kAvx512) {
        EXPECT_TRUE(pw.interleaved) << what;
      }
      const int64_t q_bytes = type == DType::kQ8_0   ? 512
                              : type == DType::kQ6_K ? 3328
                              : type == DType::kQ5_0 ? 320
                              : type == DType::kQ3_K ? 1728
                                                     : 256;  // Q4_0, IQ4_NL
      const int64_t pair = 64 + 2 * q_bytes, panel_bytes = (blocks + 1) / 2 * pair;
      const int64_t block_bytes = dtype_info(type).type_size;
      // Where a block's f16 scale d sits in the file's block (BlockQ6_K: ql, qh, scales, d;
      // BlockQ3_K: hmask, qs, scales, d).
      const int64_t d_in_block = type == DType::kQ6_K ? 128 + 64 + 16 : type == DType::kQ3_K ? 32 + 64 + 12 : 0;
      ASSERT_EQ(pw.num_bytes(), 19 * panel_bytes);
      for (int64_t row : {int64_t{0}, int64_t{37}, int64_t{8 * 16 + 5}, int64_t{16 * 16 + 15}, rows - 1}) {
        const int64_t p = row / 16, group = p / 8, in_group = p % 8, group_size = std::min<int64_t>(8, 19 - 8 * group);
        for (int64_t b = 0; b < blocks; ++b) {
          const int64_t slot = 32 * (b % 2) + 2 * (row % 16);
          const int64_t at = pw.interleaved
                                 ? group * 8 * panel_bytes + b / 2 * group_size * pair + in_group * pair + slot
                                 : p * panel_bytes + b / 2 * pair + slot;
          uint16_t packed = 0, file = 0;
          std::memcpy(&packed, pw.data.data() + at, 2);
          std::memcpy(&file, m.bytes.data() + row * dtype_row_bytes(type, cols) + b * block_bytes + d_in_block, 2);
          EXPECT_EQ(packed, file) << what << " row " << row << " block " << b;
        }
      }
    }
  }
}

// Rows long enough to span several of the GEMM's column chunks (and a partial last
// one), and batches around and beyond the tokens one pass over a panel keeps.
TEST(MatmulTest, LongRowsAndLargeBatchesMatchReferenceExactly) {
  ThreadPool pool(2);
  for (DType type : kKernelTypes) {
    // More than the longest chunk of any target (2048 floats, 64 blocks of 32, 8 of 256).
    const int64_t blocks = block_of(type) == 1 ? 60 : block_of(type) == 32 ? 67 : 9;
    const int64_t rows = 35, cols = cols_for(type, blocks);
    const TestMatrix m = quantized_matrix(type, rows, cols, 31);
    const auto x = activations(130, cols, 32);
    for (int64_t n : {63, 64, 65, 130}) expect_every_target_matches_reference(m, x, n, pool, "long rows");
  }
}

// Products sharing one input in one pool job equal the products made one at a time,
// bit for bit, on every target: every kind side by side (float and each activation
// format, two of the same format), row counts that split panels and align groups
// unevenly, for decode and batches.
TEST(MatmulTest, SharedInputProductsEqualSeparateProducts) {
  ThreadPool pool(2);
  const int64_t cols = 512;  // whole blocks of every type
  const DType types[] = {DType::kQ8_0, DType::kF16, DType::kQ4_0, DType::kQ4_K, DType::kQ8_0, DType::kQ6_K, DType::kF32};
  const int64_t rows[] = {70, 16, 33, 129, 5, 48, 64};
  std::vector<TestMatrix> mats;
  for (size_t i = 0; i < std::size(types); ++i) mats.push_back(quantized_matrix(types[i], rows[i], cols, 300 + i));
  const auto x = activations(9, cols, 11);
  for (SimdTarget target : supported_simd_targets()) {
    ScopedSimdTarget scoped(target);
    for (int64_t n : {1, 2, 9}) {
      std::vector<std::vector<float>> got(mats.size()), want(mats.size());
      std::vector<MatmulOutput> outs;
      for (size_t i = 0; i < mats.size(); ++i) {
        want[i].resize(static_cast<size_t>(n * rows[i]));
        got[i].assign(want[i].size(), -1.0f);
        matmul(mats[i].w, x.data(), n, want[i].data(), pool);
        outs.push_back({&mats[i].w, got[i].data()});
      }
      matmul_shared_input(outs, x.data(), n, pool);
      for (size_t i = 0; i < mats.size(); ++i) {
        expect_same_bits(got[i], want[i],
                         std::string(dtype_name(types[i])) + " output " + std::to_string(i) + " " +
                             simd_target_name(target) + " n " + std::to_string(n));
      }
    }
  }
}

TEST(MatmulTest, RandomBlocksMatchReferenceExactly) {
  // Levels and scales at the ends of their ranges: no target may saturate or overflow.
  ThreadPool pool(2);
  for (DType type : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K, DType::kQ5_0, DType::kQ5_1,
                     DType::kIQ4_NL, DType::kQ5_K, DType::kIQ4_XS, DType::kQ3_K}) {
    const int64_t rows = 33, cols = block_of(type) * 2, n = 3;
    const TestMatrix m = random_block_matrix(type, rows, cols, 5);
    auto x = activations(n, cols, 9);
    x[3] = 1000.0f;  // one block dominated by a single value
    std::vector<float> want(static_cast<size_t>(n * rows)), got(want.size());
    matmul_reference(m.w, x.data(), n, want.data());
    for (SimdTarget target : supported_simd_targets()) {
      ScopedSimdTarget scoped(target);
      matmul(m.w, x.data(), n, got.data(), pool);
      expect_same_bits(got, want, std::string(dtype_name(type)) + " " + simd_target_name(target));
    }
  }
}

// The integer paths quantize activations; their products stay within a small
// relative error of the exact product of the decoded weights.
TEST(MatmulTest, QuantizedProductsAreCloseToFloatProducts) {
  ThreadPool pool(2);
  for (DType type : kKernelTypes) {
    const int64_t rows = 40, cols = cols_for(type, 2) * (block_of(type) == 32 ? 8 : 1), n = 3;
    const TestMatrix m = quantized_matrix(type, rows, cols, 11);
    const auto x = activations(n, cols, 12);
    std::vector<float> y(static_cast<size_t>(n * rows));
    matmul(m.w, x.data(), n, y.data(), pool);
    const double rel = relative_rms_error(m, type, x, y, n);
    // 8-bit activations: about 0.5% relative RMS. F16 weights take activations
    // rounded to F16: each product term off by at most 2^-11 of itself (the unit
    // roundoff), so a sum of random-signed terms by at most that relative RMS. F32
    // and BF16: float rounding only.
    const double bound = type == DType::kF16 ? std::ldexp(1.0, -11) : block_of(type) == 1 ? 1e-6 : 0.01;
    EXPECT_LT(rel, bound) << dtype_name(type);
  }
}

TEST(MatmulTest, TokenResultDoesNotDependOnBatchOrThreads) {
  ThreadPool pool1(1), pool2(2), pool3(3);
  for (DType type : kKernelTypes) {
    const int64_t rows = 83, cols = cols_for(type, 2), n = 13;
    const TestMatrix m = quantized_matrix(type, rows, cols, 21);
    auto x = activations(n, cols, 22);
    for (SimdTarget target : supported_simd_targets()) {
      ScopedSimdTarget scoped(target);
      const std::string what = std::string(dtype_name(type)) + " " + simd_target_name(target);
      std::vector<float> batch(static_cast<size_t>(n * rows));
      matmul(m.w, x.data(), n, batch.data(), pool2);
      for (ThreadPool* pool : {&pool1, &pool3}) {
        std::vector<float> other(batch.size());
        matmul(m.w, x.data(), n, other.data(), *pool);
        expect_same_bits(other, batch, what + " threads " + std::to_string(pool->num_threads()));
      }
      // Each token alone, and token 5 inside a batch whose other tokens changed.
      for (int64_t t = 0; t < n; ++t) {
        std::vector<float> one(static_cast<size_t>(rows));
        matmul(m.w, x.data() + t * cols, 1, one.data(), pool2);
        expect_same_bits(one, std::vector<float>(batch.begin() + t * rows, batch.begin() + (t + 1) * rows),
                         what + " token " + std::to_string(t));
      }
      auto x2 = activations(n, cols, 23);
      std::memcpy(x2.data() + 5 * cols, x.data() + 5 * cols, static_cast<size_t>(cols) * 4);
      std::vector<float> batch2(batch.size());
      matmul(m.w, x2.data(), n, batch2.data(), pool2);
      expect_same_bits(std::vector<float>(batch2.begin() + 5 * rows, batch2.begin() + 6 * rows),
                       std::vector<float>(batch.begin() + 5 * rows, batch.begin() + 6 * rows), what + " other tokens");
    }
  }
}

TEST(MatmulTest, TypesWithoutKernelsAreConvertedAndStillAccurate) {
  ThreadPool pool(2);
  for (DType type : {DType::kQ4_1, DType::kQ8_1, DType::kQ2_K}) {
    const int64_t rows = 20, cols = 256, n = 2;
    const TestMatrix m = random_block_matrix(type, rows, cols, 31);
    EXPECT_EQ(m.w.dtype(), type);
    EXPECT_EQ(m.w.kernel_dtype(), DType::kQ8_0);
    const auto x = activations(n, cols, 32);
    std::vector<float> y(static_cast<size_t>(n * rows)), want(y.size());
    matmul(m.w, x.data(), n, y.data(), pool);
    matmul_reference(m.w, x.data(), n, want.data());
    expect_same_bits(y, want, std::string(dtype_name(type)));
    const double rel = relative_rms_error(m, type, x, y, n);
    EXPECT_LT(rel, 0.02) << dtype_name(type);
  }
}

TEST(MatmulTest, PackedSizeEqualsFileSizeForWholePanels) {
  for (DType type : kKernelTypes) {
    const TestMatrix m = quantized_matrix(type, 32, block_of(type) == 1 ? 64 : 512, 1);
    EXPECT_EQ(m.w.packed_bytes(), m.w.num_bytes()) << dtype_name(type);
  }
}

TEST(MatmulTest, ReorderedRowsPackAsTheirReorderedCopy) {
  // Every kernel type and a widened one; 37 rows leave a partial last panel.
  std::vector<DType> types(std::begin(kKernelTypes), std::end(kKernelTypes));
  types.push_back(DType::kQ4_1);
  for (DType type : types) {
    const int64_t rows = 37, cols = cols_for(type, 2), rb = dtype_row_bytes(type, cols);
    const TestMatrix m = random_block_matrix(type, rows, cols, 41);
    std::vector<int64_t> order(static_cast<size_t>(rows));
    Rng rng(42);
    for (int64_t i = 0; i < rows; ++i) order[static_cast<size_t>(i)] = i;
    for (int64_t i = rows - 1; i > 0; --i) std::swap(order[i], order[rng.next_u64() % static_cast<uint64_t>(i + 1)]);
    std::vector<uint8_t> copy(m.bytes.size());
    for (int64_t i = 0; i < rows; ++i) std::memcpy(copy.data() + i * rb, m.bytes.data() + order[i] * rb, rb);
    auto want = WeightMatrix::from_tensor(matrix_view(type, rows, cols, copy), "w");
    auto got = WeightMatrix::from_reordered(matrix_view(type, rows, cols, m.bytes), order, "w");
    ASSERT_TRUE(want.ok() && got.ok()) << dtype_name(type);
    ASSERT_EQ(got->packed_bytes(), want->packed_bytes()) << dtype_name(type);
    EXPECT_EQ(std::memcmp(got->packed().data.data(), want->packed().data.data(), got->packed_bytes()), 0)
        << dtype_name(type);
    EXPECT_EQ(got->tensor().data, nullptr) << "its rows are not in the matrix's order";
  }
  const TestMatrix four = quantized_matrix(DType::kF32, 4, 8, 1);
  const std::vector<int64_t> two_rows = {0, 1};
  EXPECT_FALSE(WeightMatrix::from_reordered(four.w.tensor(), two_rows, "w").ok());
}

TEST(MatmulTest, UnsupportedTypeIsAClearError) {
  std::vector<uint8_t> bytes(4 * 32);
  auto wm = WeightMatrix::from_tensor(matrix_view(DType::kIQ2_XXS, 1, 256, bytes), "blk.0.attn_q.weight");
  ASSERT_FALSE(wm.ok());
  EXPECT_NE(wm.status().message().find("blk.0.attn_q.weight"), std::string::npos);
  EXPECT_NE(wm.status().message().find("iq2_xxs"), std::string::npos);
}

TEST(SimdTargetTest, ScopedTargetSwitchesAndRestores) {
  const SimdTarget before = active_simd_target();
  const auto targets = supported_simd_targets();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(targets.front(), SimdTarget::kScalar);
  for (SimdTarget t : targets) {
    ScopedSimdTarget scoped(t);
    EXPECT_EQ(active_simd_target(), t);
    EXPECT_STREQ(simd_target_name(), simd_target_name(t));
  }
  EXPECT_EQ(active_simd_target(), before);
}

}  // namespace
}  // namespace llms
