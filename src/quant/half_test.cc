#include "quant/half.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <vector>

#include "base/cpu_features.h"
#include "base/random.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

// The x86 F16C instructions are an independent reference for IEEE binary16 rounding.
__attribute__((target("f16c"))) uint16_t hw_f32_to_f16(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float hw_f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }

bool have_f16c() { return cpu_has_f16c(); }

TEST(HalfTest, EveryF16RoundTripsThroughF32) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
      continue;
    }
    EXPECT_EQ(f32_to_f16(f), h) << std::hex << h;
    if (have_f16c()) EXPECT_EQ(float_to_bits(f), float_to_bits(hw_f16_to_f32(static_cast<uint16_t>(h)))) << h;
  }
}

TEST(HalfTest, F32ToF16RoundsLikeHardware) {
  if (!have_f16c()) GTEST_SKIP() << "CPU lacks F16C";
  Rng rng(1);
  for (int i = 0; i < 2000000; ++i) {
    // Random bit patterns cover every exponent, including subnormals, ties and overflow.
    const float f = bits_to_float(static_cast<uint32_t>(rng.next_u64()));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), hw_f32_to_f16(f)) << std::hexfloat << f;
  }
  for (float f : {65504.0f, 65519.99f, 65520.0f, 5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f, 6.1035156e-05f}) {
    EXPECT_EQ(f32_to_f16(f), hw_f32_to_f16(f)) << std::hexfloat << f;
  }
}

// Rows of floats to F16 through the traits table give f32_to_f16 of each value, NaNs
// and odd lengths included, and back f16_to_f32 (the kernels' SIMD rows are checked
// against these in kernels/ops_test.cc).
TEST(HalfTest, F16RowsConvertEachValueAsTheScalarDefinition) {
  Rng rng(7);
  for (int64_t n : {1, 7, 8, 9, 64, 1003}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = bits_to_float(static_cast<uint32_t>(rng.next_u64()));
    x[0] = std::nanf("");
    std::vector<uint16_t> got(static_cast<size_t>(n));
    quantize_row(DType::kF16, x.data(), got.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[static_cast<size_t>(i)], f32_to_f16(x[static_cast<size_t>(i)])) << n << " " << i;
    // And back: every value as f16_to_f32 gives it.
    std::vector<float> back(static_cast<size_t>(n));
    dequantize_row(DType::kF16, got.data(), back.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(float_to_bits(back[static_cast<size_t>(i)]), float_to_bits(f16_to_f32(got[static_cast<size_t>(i)])));
    }
  }
}

TEST(HalfTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16(bits_to_float(0x3F808000)), 0x3F80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(bits_to_float(0x3F818000)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(bits_to_float(0x3F808001)), 0x3F81);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bf16_to_f32(static_cast<uint16_t>(b));
    if (!std::isnan(f)) EXPECT_EQ(f32_to_bf16(f), b);
  }
}

}  // namespace
}  // namespace llms
