// Round trips float -> type -> float: error bounds per type on Gaussian rows and on
// rows with outliers, and the properties the encoders promise (exact zeros, the
// largest value kept, the k-quant search beating plain rounding).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/random.h"
#include "quant/block_formats.h"
#include "quant/half.h"
#include "quant/k_quant_search.h"
#include "quant/row_convert.h"
#include "tensor/dtype.h"

namespace llms {
namespace {

std::vector<float> gaussian(int64_t n, uint64_t seed, double outlier_rate = 0.0) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) {
    x = static_cast<float>(rng.normal());
    if (outlier_rate > 0 && rng.uniform() < outlier_rate) x *= 12.0f;
  }
  return v;
}

std::vector<float> round_trip(DType type, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> bytes(static_cast<size_t>(dtype_row_bytes(type, n)));
  quantize_row(type, x.data(), bytes.data(), n);
  std::vector<float> y(x.size());
  dequantize_row(type, bytes.data(), y.data(), n);
  return y;
}

// sqrt(mean((x - y)^2)) / sqrt(mean(x^2)).
double relative_rms(const std::vector<float>& x, const std::vector<float>& y) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    den += double(x[i]) * x[i];
  }
  return std::sqrt(num / den);
}

struct Bound {
  DType type;
  double gaussian;   // relative RMS error on N(0, 1) rows
  double outliers;   // with 1% of values 12x larger
};

// Bounds sit about 25% above what these encoders measure, so a regression in the
// search or a layout slip fails them.
constexpr Bound kBounds[] = {
    {DType::kF16, 2.7e-4, 2.8e-4}, {DType::kBF16, 2.1e-3, 2.1e-3}, {DType::kQ8_0, 0.0068, 0.012},
    {DType::kQ4_0, 0.108, 0.187},  {DType::kQ4_K, 0.088, 0.12},    {DType::kQ6_K, 0.022, 0.036},
    {DType::kQ8_K, 0.0095, 0.029},  {DType::kQ4_1, 0.095, 0.125},   {DType::kQ5_0, 0.053, 0.10},
    {DType::kQ5_1, 0.047, 0.060},  {DType::kQ3_K, 0.19, 0.233},    {DType::kQ5_K, 0.045, 0.058},
    {DType::kIQ4_NL, 0.095, 0.143}, {DType::kIQ4_XS, 0.095, 0.145},
};

TEST(QuantizeTest, RoundTripErrorWithinBounds) {
  for (const Bound& b : kBounds) {
    const auto x = gaussian(4096, 7);
    const double e = relative_rms(x, round_trip(b.type, x));
    EXPECT_LT(e, b.gaussian) << dtype_name(b.type);
    EXPECT_GT(e, 0.0) << dtype_name(b.type);  // the bound is about something
    const auto xo = gaussian(4096, 8, 0.01);
    EXPECT_LT(relative_rms(xo, round_trip(b.type, xo)), b.outliers) << dtype_name(b.type);
  }
}

TEST(QuantizeTest, MoreBitsMeanLessError) {
  const auto x = gaussian(8192, 9);
  const double q4_0 = relative_rms(x, round_trip(DType::kQ4_0, x));
  const double q4_k = relative_rms(x, round_trip(DType::kQ4_K, x));
  const double q6_k = relative_rms(x, round_trip(DType::kQ6_K, x));
  const double q8_0 = relative_rms(x, round_trip(DType::kQ8_0, x));
  EXPECT_LT(q4_k, q4_0);
  EXPECT_LT(q6_k, q4_k);
  EXPECT_LT(q8_0, q6_k);
  const double q3_k = relative_rms(x, round_trip(DType::kQ3_K, x));
  const double q5_k = relative_rms(x, round_trip(DType::kQ5_K, x));
  const double q5_0 = relative_rms(x, round_trip(DType::kQ5_0, x));
  const double iq4_xs = relative_rms(x, round_trip(DType::kIQ4_XS, x));
  EXPECT_LT(q4_0, q3_k);
  EXPECT_LT(q5_k, q4_k);
  EXPECT_LT(q6_k, q5_k);
  EXPECT_LT(q5_0, q4_0);
  EXPECT_LT(iq4_xs, q4_0);  // the codebook fits Gaussian values better than even levels
}

TEST(QuantizeTest, ZerosStayZeroAndConstantsSurvive) {
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K, DType::kF16, DType::kBF16, DType::kQ5_0,
                 DType::kQ5_K, DType::kQ3_K, DType::kIQ4_NL, DType::kIQ4_XS, DType::kQ4_1, DType::kQ5_1}) {
    const std::vector<float> zeros(512, 0.0f);
    for (float v : round_trip(t, zeros)) ASSERT_EQ(v, 0.0f) << dtype_name(t);
    const std::vector<float> ones(512, 1.0f);
    for (float v : round_trip(t, ones)) ASSERT_NEAR(v, 1.0f, 1e-2) << dtype_name(t);
  }
}

TEST(QuantizeTest, Q8_0KeepsTheLargestValue) {
  auto x = gaussian(32, 3);
  x[7] = 10.0f;
  const auto y = round_trip(DType::kQ8_0, x);
  // d = 10 / 127 stored as f16, so x[7] comes back as 127 * f16(d).
  EXPECT_EQ(y[7], 127.0f * f16_to_f32(f32_to_f16(10.0f / 127.0f)));
  BlockQ8_0 b;
  quantize_row(DType::kQ8_0, x.data(), &b, 32);
  EXPECT_EQ(b.qs[7], 127);
}

// The one-pass Q8_0 encoder of the KV cache: scale amax / 127 and each value rounded
// to nearest, ties to even, at the unrounded scale; other types as quantize_row.
TEST(QuantizeTest, Q8_0NearestRoundsEachValueAtTheMaxScale) {
  // amax 127 makes the scale 1, so the codes are the values rounded by hand.
  std::vector<float> x(32, 0.0f);
  const float in[] = {127.0f, 2.5f, 3.5f, -2.5f, 0.5f, -0.5f, 1.49f, -126.5f, 126.51f, 0.0f};
  const int8_t want[] = {127, 2, 4, -2, 0, 0, 1, -126, 127, 0};
  std::copy(std::begin(in), std::end(in), x.begin());
  BlockQ8_0 b;
  quantize_row_nearest(DType::kQ8_0, x.data(), &b, 32);
  EXPECT_EQ(f16_to_f32(b.d), 1.0f);
  for (size_t j = 0; j < std::size(want); ++j) EXPECT_EQ(b.qs[j], want[j]) << j;
  // Gaussian blocks (and one of zeros) against the rule computed with nearbyint.
  auto g = gaussian(256, 21, 0.02);
  std::fill(g.begin() + 64, g.begin() + 96, 0.0f);
  std::vector<BlockQ8_0> q(8);
  quantize_row_nearest(DType::kQ8_0, g.data(), q.data(), 256);
  for (int i = 0; i < 8; ++i) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(g[32 * i + j]));
    const float d = amax / 127.0f;
    EXPECT_EQ(q[i].d, f32_to_f16(d)) << i;
    for (int j = 0; j < 32; ++j) {
      const int code = d == 0.0f ? 0 : static_cast<int>(std::nearbyint(g[32 * i + j] * (1.0f / d)));
      ASSERT_EQ(q[i].qs[j], code) << i << " " << j;
    }
  }
  // The other types: quantize_row's bytes.
  std::vector<uint8_t> a(static_cast<size_t>(dtype_row_bytes(DType::kQ4_0, 256))), c(a.size());
  quantize_row_nearest(DType::kQ4_0, g.data(), a.data(), 256);
  quantize_row(DType::kQ4_0, g.data(), c.data(), 256);
  EXPECT_EQ(a, c);
}

TEST(QuantizeTest, Q4_0MapsTheLargestMagnitudeToMinusEight) {
  std::vector<float> x(32, 0.5f);
  x[3] = -4.0f;
  BlockQ4_0 b;
  quantize_row(DType::kQ4_0, x.data(), &b, 32);
  EXPECT_EQ(f16_to_f32(b.d), 0.5f);  // -4 / -8
  EXPECT_EQ(b.qs[3] & 0xF, 0);       // level -8
  EXPECT_EQ(b.qs[0] & 0xF, 9);       // 0.5 / 0.5 + 8
}

TEST(QuantizeTest, Q4_KPacksFieldsWhereTheDecoderLooks) {
  // A ramp has a known best fit: sub-block j spans [32j, 32j + 31] / 256 - 0.5.
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i) / 256.0f - 0.5f;
  BlockQ4_K b;
  quantize_row(DType::kQ4_K, x.data(), &b, 256);
  std::vector<float> y(256);
  dequantize_row(DType::kQ4_K, &b, y.data(), 256);
  for (int i = 0; i < 256; ++i) ASSERT_NEAR(y[i], x[i], 0.02f) << i;
}

TEST(QuantizeTest, ScaleSearchBeatsMinMaxRounding) {
  // Plain min/max rounding versus the search, on the same weighted error.
  Rng rng(5);
  double plain_err = 0, search_err = 0;
  for (int trial = 0; trial < 200; ++trial) {
    float x[32], w[32];
    for (int i = 0; i < 32; ++i) {
      x[i] = static_cast<float>(rng.normal());
      w[i] = 1.0f;
    }
    const float lo = std::min(0.0f, *std::min_element(x, x + 32)), hi = *std::max_element(x, x + 32);
    const float s0 = (hi - lo) / 15.0f;
    uint8_t q[32];
    float min;
    const float s = search_scale_min(x, w, 32, 15, &min, q);
    for (int i = 0; i < 32; ++i) {
      const float plain = s0 * std::nearbyint((x[i] - lo) / s0) + lo;
      plain_err += (plain - x[i]) * (plain - x[i]);
      const float found = s * q[i] - min;
      search_err += (found - x[i]) * (found - x[i]);
    }
  }
  EXPECT_LT(search_err, 0.9 * plain_err);
}

TEST(QuantizeTest, SymmetricSearchUsesTheLongSide) {
  int8_t q[16];
  float x[16];
  for (int i = 0; i < 16; ++i) x[i] = 0.1f * static_cast<float>(i);
  const float s = search_scale_symmetric(x, 16, 32, q);
  EXPECT_LT(s, 0.0f);  // the largest value is positive, so it maps to the negative end
  for (int i = 0; i < 16; ++i) {
    EXPECT_GE(q[i], -32);
    EXPECT_LE(q[i], 31);
    EXPECT_NEAR(s * q[i], x[i], 0.03f);
  }
}

// Importance-weighted error sum imp * (x - decode(encode(x)))^2 over rows of `cols`.
double weighted_error(DType type, const std::vector<float>& x, const std::vector<float>& imp, int64_t cols,
                      bool use_importance) {
  std::vector<uint8_t> q(static_cast<size_t>(dtype_row_bytes(type, cols)));
  std::vector<float> y(static_cast<size_t>(cols));
  double err = 0;
  for (size_t r = 0; r * cols < x.size(); ++r) {
    const float* row = x.data() + r * cols;
    quantize_row_weighted(type, row, use_importance ? imp.data() : nullptr, q.data(), cols);
    dequantize_row(type, q.data(), y.data(), cols);
    for (int64_t c = 0; c < cols; ++c) err += imp[c] * static_cast<double>(row[c] - y[c]) * (row[c] - y[c]);
  }
  return err;
}

// With channels of very unequal importance (log-normal, a spread of e^2 per sigma),
// every weighted encoder spends its precision where it counts: its weighted error is
// clearly below the unweighted encoding's. Q4_0 and Q5_0 can only gain (the weighted
// search includes the plain scale's levels and refits the scale to them by weighted
// least squares); the others choose among candidates, so the test asks a clear margin
// over 64 rows.
TEST(QuantizeTest, ImportanceWeightsLowerTheWeightedError) {
  Rng rng(17);
  const int64_t cols = 512, rows = 64;
  std::vector<float> imp(cols), x(static_cast<size_t>(cols * rows));
  for (float& v : imp) v = static_cast<float>(std::exp(2.0 * rng.normal()));
  for (float& v : x) v = static_cast<float>(rng.normal());
  for (DType type : {DType::kQ4_0, DType::kQ5_0, DType::kIQ4_NL, DType::kIQ4_XS, DType::kQ4_K, DType::kQ5_K}) {
    const double plain = weighted_error(type, x, imp, cols, false), weighted = weighted_error(type, x, imp, cols, true);
    EXPECT_LT(weighted, 0.95 * plain) << dtype_name(type);
  }
  // Q8_0's search chooses among nearby scales: never worse with importance.
  EXPECT_LE(weighted_error(DType::kQ8_0, x, imp, cols, true), weighted_error(DType::kQ8_0, x, imp, cols, false));
  // Types without a weighted encoder ignore the weights.
  for (DType type : {DType::kQ6_K, DType::kQ3_K, DType::kF16}) {
    EXPECT_EQ(weighted_error(type, x, imp, cols, true), weighted_error(type, x, imp, cols, false)) << dtype_name(type);
  }
}

}  // namespace
}  // namespace llms
