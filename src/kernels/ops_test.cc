#include "kernels/ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/random.h"
#include "kernels/convert.h"
#include "kernels/kernel_table.h"
#include "kernels/simd_target.h"
#include "quant/half.h"
#include "quant/quant_traits.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

TEST(OpsTest, RmsnormHandComputed) {
  // x = [3, 4]: mean square 12.5, 1/sqrt(12.5) = 0.28284271.
  const float x[2] = {3, 4}, w[2] = {1, 2};
  float out[2];
  rmsnorm(x, w, 2, 0.0f, out);
  EXPECT_NEAR(out[0], 3 * 0.28284271f, 1e-6);
  EXPECT_NEAR(out[1], 8 * 0.28284271f, 1e-6);
}

TEST(OpsTest, RopeRotatesPairsByPositionTimesFrequency) {
  // One head of 4 dims, rot_dim 4: pair (0,1) at freq 1, pair (2,3) at freq 0.01.
  const float inv_freq[2] = {1.0f, 0.01f};
  float x[4] = {1, 0, 0, 1};
  rope(x, 1, 4, 4, 2, inv_freq, RopeStyle::kNormal);
  EXPECT_NEAR(x[0], std::cos(2.0f), 1e-6);
  EXPECT_NEAR(x[1], std::sin(2.0f), 1e-6);
  EXPECT_NEAR(x[2], -std::sin(0.02f), 1e-6);
  EXPECT_NEAR(x[3], std::cos(0.02f), 1e-6);
  // NeoX pairs (0,2) and (1,3).
  float y[4] = {1, 0, 0, 1};
  rope(y, 1, 4, 4, 2, inv_freq, RopeStyle::kNeox);
  EXPECT_NEAR(y[0], std::cos(2.0f), 1e-6);
  EXPECT_NEAR(y[2], std::sin(2.0f), 1e-6);
  EXPECT_NEAR(y[1], -std::sin(0.02f), 1e-6);
  EXPECT_NEAR(y[3], std::cos(0.02f), 1e-6);
}

TEST(OpsTest, SoftmaxSumsToOneAndKeepsOrder) {
  std::vector<float> x = {1, 2, 3, 1000};
  softmax(x.data(), 4);
  EXPECT_NEAR(x[3], 1.0f, 1e-6);
  std::vector<float> y = {0, std::log(3.0f)};
  softmax(y.data(), 2);
  EXPECT_NEAR(y[0], 0.25f, 1e-6);
  EXPECT_NEAR(y[1], 0.75f, 1e-6);
}

TEST(OpsTest, SiluMulAndGeluHandValues) {
  const float g[2] = {0.0f, 1.0f}, u[2] = {5.0f, 2.0f};
  float out[2];
  silu_mul(g, u, 2, out);
  EXPECT_FLOAT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 2.0f / (1.0f + std::exp(-1.0f)), 1e-6);
  const float x[1] = {1.0f};
  float o[1];
  gelu(x, 1, o);
  EXPECT_NEAR(o[0], 0.8411920f, 1e-6);  // 0.5 * (1 + tanh(0.79788456 * 1.044715))
}

std::vector<float> normal_vector(int64_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = scale * static_cast<float>(rng.normal());
  return v;
}

// |got - want| <= rel * max(|want|) + abs over a vector.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel, double abs,
                  const std::string& what) {
  double scale = 0;
  for (float v : want) scale = std::max(scale, double(std::fabs(v)));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * scale + abs) << what << " at " << i;
}

constexpr int64_t kLengths[] = {1, 7, 16, 17, 100, 2048, 5632};

// Bounds: sums in another order cost a few ulp of the row's scale (softmax sums up to
// 5632 terms one by one in the reference, hence its looser bound); exp is within
// 2 ulp of std::exp; the reference gelu loses ~1e-7 absolute to cancellation in
// 1 + tanh(u) for negative inputs, which the SIMD form v / (1 + exp(-2u)) avoids.
TEST(OpsTest, EveryTargetMatchesReference) {
  for (SimdTarget target : supported_simd_targets()) {
    ScopedSimdTarget scoped(target);
    for (int64_t n : kLengths) {
      const std::string what = std::string(simd_target_name(target)) + " n=" + std::to_string(n);
      const auto x = normal_vector(n, 1, 3.0f), w = normal_vector(n, 2), b = normal_vector(n, 3);
      std::vector<float> got(x.size()), want(x.size());

      rmsnorm(x.data(), w.data(), n, 1e-5f, got.data());
      ref::rmsnorm(x.data(), w.data(), n, 1e-5f, want.data());
      expect_close(got, want, 2e-6, 0, "rmsnorm " + what);

      for (const float* bias : {static_cast<const float*>(nullptr), b.data()}) {
        layernorm(x.data(), w.data(), bias, n, 1e-5f, got.data());
        ref::layernorm(x.data(), w.data(), bias, n, 1e-5f, want.data());
        expect_close(got, want, 2e-6, 0, "layernorm " + what);
      }

      got = x, want = x;
      softmax(got.data(), n);
      ref::softmax(want.data(), n);
      expect_close(got, want, 2e-5, 1e-9, "softmax " + what);

      // Online step: once with a running max above every score, once below.
      for (const float m_old : {-1.0f, *std::max_element(x.begin(), x.end()) + 1.0f}) {
        got = x, want = x;
        float got_max = 0, want_max = 0;
        const float got_sum = softmax_step(got.data(), n, m_old, &got_max);
        const float want_sum = ref::softmax_step(want.data(), n, m_old, &want_max);
        EXPECT_EQ(got_max, want_max) << "softmax_step max " << what;
        expect_close(got, want, 2e-6, 0, "softmax_step " + what);
        EXPECT_NEAR(got_sum, want_sum, 2e-5 * want_sum) << "softmax_step sum " << what;
      }

      silu_mul(x.data(), w.data(), n, got.data());
      ref::silu_mul(x.data(), w.data(), n, want.data());
      expect_close(got, want, 1e-6, 0, "silu_mul " + what);

      gelu(x.data(), n, got.data());
      ref::gelu(x.data(), n, want.data());
      expect_close(got, want, 1e-6, 1e-7, "gelu " + what);

      got = x, want = x;
      add_inplace(got.data(), w.data(), n);
      ref::add_inplace(want.data(), w.data(), n);
      EXPECT_EQ(got, want) << "add_inplace " << what;

      const float dot = dot_f32(x.data(), w.data(), n), dot_ref = ref::dot_f32(x.data(), w.data(), n);
      double mag = 0;
      for (int64_t i = 0; i < n; ++i) mag += std::fabs(double(x[i]) * w[i]);
      EXPECT_NEAR(dot, dot_ref, 1e-6 * mag) << "dot_f32 " << what;
    }
  }
}

TEST(OpsTest, EveryTargetRotatesExactlyAsReference) {
  for (SimdTarget target : supported_simd_targets()) {
    ScopedSimdTarget scoped(target);
    for (auto [head_dim, rot_dim] : {std::pair<int, int>{8, 8}, {64, 64}, {128, 64}, {80, 40}}) {
      std::vector<float> inv_freq(static_cast<size_t>(rot_dim / 2));
      for (int i = 0; i < rot_dim / 2; ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / rot_dim);
      for (RopeStyle style : {RopeStyle::kNormal, RopeStyle::kNeox}) {
        for (int64_t pos : {0, 1, 37, 4095}) {
          auto got = normal_vector(3 * head_dim, 4);
          auto want = got;
          rope(got.data(), 3, head_dim, rot_dim, pos, inv_freq.data(), style);
          ref::rope(want.data(), 3, head_dim, rot_dim, pos, inv_freq.data(), style);
          EXPECT_EQ(got, want) << simd_target_name(target) << " head_dim " << head_dim << " pos " << pos;
        }
      }
    }
  }
}

TEST(OpsTest, SoftmaxAndActivationsSurviveExtremeInputs) {
  for (SimdTarget target : supported_simd_targets()) {
    ScopedSimdTarget scoped(target);
    std::vector<float> x = {-1e30f, -200.0f, 0.0f, 80.0f, 1e30f};
    softmax(x.data(), 5);
    EXPECT_EQ(x[4], 1.0f) << simd_target_name(target);
    for (int i = 0; i < 4; ++i) EXPECT_LT(x[i], 1e-30f) << simd_target_name(target);
    const std::vector<float> g = {-1000.0f, -90.0f, 90.0f, 1000.0f}, up(4, 1.0f);
    std::vector<float> out(4);
    silu_mul(g.data(), up.data(), 4, out.data());
    EXPECT_NEAR(out[0], 0.0f, 1e-30f);
    EXPECT_NEAR(out[1], 0.0f, 1e-30f);
    EXPECT_EQ(out[2], 90.0f);
    EXPECT_EQ(out[3], 1000.0f);
    gelu(g.data(), 4, out.data());
    EXPECT_NEAR(out[0], 0.0f, 1e-30f);
    EXPECT_EQ(out[3], 1000.0f);
  }
}

// Rounding floats to F16 (the activations of F16 products) gives the scalar
// conversion's round-to-nearest-even on every target: ties both ways, subnormal
// halves, values that overflow to infinity, signed zeros, and a tail shorter than
// a vector.
TEST(OpsTest, RoundingToF16MatchesTheScalarConversion) {
  std::vector<float> x;
  for (uint32_t h = 0; h < 0x7C00; h += 7) {  // between neighbouring halves, and on ties
    const float a = f16_to_f32(static_cast<uint16_t>(h)), b = f16_to_f32(static_cast<uint16_t>(h + 1));
    for (float v : {a, b, 0.5f * (a + b), std::nextafter(0.5f * (a + b), a), std::nextafter(0.5f * (a + b), b)}) {
      x.push_back(v);
      x.push_back(-v);
    }
  }
  for (float v : {65504.0f, 65519.0f, 65520.0f, 1e6f, 1e-8f, 3e-8f, 0.0f, -0.0f}) x.push_back(v);
  x.resize(x.size() + 16 - x.size() % 16 + 5, 0.75f);
  for (SimdTarget target : supported_simd_targets()) {
    ScopedSimdTarget scoped(target);
    std::vector<float> got(x.size());
    active_kernels().round_f16_row(x.data(), got.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(float_to_bits(got[i]), float_to_bits(f16_to_f32(f32_to_f16(x[i]))))
          << simd_target_name(target) << " x " << x[i];
    }
  }
}

// The F16 row conversion (KV cache rows) gives every half's exact float on every
// target, whatever the row's length: all 65,536 bit patterns, NaNs staying NaN.
TEST(OpsTest, F16RowsConvertEveryHalfExactly) {
  std::vector<uint16_t> all(65536 + 7);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  for (SimdTarget target : supported_simd_targets()) {
    ScopedSimdTarget scoped(target);
    std::vector<float> got(all.size());
    active_kernels().f16_to_f32_row(all.data(), got.data(), static_cast<int64_t>(all.size()));
    for (size_t i = 0; i < all.size(); ++i) {
      const float want = f16_to_f32(all[i]);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got[i])) << simd_target_name(target) << " half " << i;
      } else {
        ASSERT_EQ(float_to_bits(got[i]), float_to_bits(want)) << simd_target_name(target) << " half " << i;
      }
    }
  }
}

// Floats to F16 rows (every key and value an F16 cache stores) give f32_to_f16 of
// each value on every target: random bit patterns (every exponent, subnormal halves,
// overflow to infinity, NaNs with payloads), ties between neighbouring halves, and
// lengths that leave a tail shorter than a vector.
TEST(OpsTest, F32RowsToF16MatchTheScalarConversion) {
  Rng rng(7);
  std::vector<float> x;
  for (int i = 0; i < 200000; ++i) x.push_back(bits_to_float(static_cast<uint32_t>(rng.next_u64())));
  for (uint32_t h = 0; h < 0x7C00; h += 7) {
    const float a = f16_to_f32(static_cast<uint16_t>(h)), b = f16_to_f32(static_cast<uint16_t>(h + 1));
    for (float v : {0.5f * (a + b), std::nextafter(0.5f * (a + b), a), std::nextafter(0.5f * (a + b), b)}) {
      x.push_back(v);
      x.push_back(-v);
    }
  }
  for (float v : {65504.0f, 65519.99f, 65520.0f, INFINITY, -INFINITY, std::nanf(""), -std::nanf(""), 0.0f, -0.0f}) {
    x.push_back(v);
  }
  for (SimdTarget target : supported_simd_targets()) {
    ScopedSimdTarget scoped(target);
    for (size_t n : {x.size(), size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{40}}) {
      std::vector<uint16_t> got(n, 0xFFFF);
      active_kernels().f32_to_f16_row(x.data() + x.size() - n, got.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        const float v = x[x.size() - n + i];
        ASSERT_EQ(got[i], f32_to_f16(v)) << simd_target_name(target) << " n " << n << " x " << std::hexfloat << v;
      }
    }
  }
}

// decode_row() gives dequantize_row()'s values: F16 rows through the target's
// conversion (every half but NaNs, on every target), other types through their
// scalar decoders.
TEST(OpsTest, DecodeRowGivesTheScalarDecoding) {
  std::vector<uint16_t> halves;
  for (uint32_t h = 0; h < 65536; ++h) {
    if (!std::isnan(f16_to_f32(static_cast<uint16_t>(h)))) halves.push_back(static_cast<uint16_t>(h));
  }
  const auto n = static_cast<int64_t>(halves.size());
  std::vector<float> want(halves.size());
  dequantize_row(DType::kF16, halves.data(), want.data(), n);
  for (SimdTarget target : supported_simd_targets()) {
    ScopedSimdTarget scoped(target);
    std::vector<float> got(halves.size());
    decode_row(DType::kF16, halves.data(), got.data(), n);
    for (size_t i = 0; i < halves.size(); ++i) {
      ASSERT_EQ(float_to_bits(got[i]), float_to_bits(want[i])) << simd_target_name(target) << " half " << halves[i];
    }
  }
  // BF16 has no SIMD decoder here: the scalar one, reached through the same call.
  std::vector<float> got(halves.size());
  decode_row(DType::kBF16, halves.data(), got.data(), n);
  dequantize_row(DType::kBF16, halves.data(), want.data(), n);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
}

// The KV cache's Q8_0 decoders give each value's scale times its int8 on every
// target: rows as dequantize_row_q8_0 (the scalar decoding), keys by column against
// the transposition written out here, for block sizes with and without a partial
// vector of tokens. Scales run over normal and subnormal halves, values over -128..127.
TEST(OpsTest, Q8_0KvDecodersAreExactOnEveryTarget) {
  Rng rng(5);
  auto random_half = [&] {
    const uint16_t h = static_cast<uint16_t>(rng.next_u64() & 0x7BFF);  // finite, normal or subnormal
    return static_cast<uint16_t>(h | ((rng.next_u64() & 1) << 15));
  };
  const int64_t n = 32 * 9;
  std::vector<uint8_t> blocks(static_cast<size_t>(n / 32 * 34));
  for (size_t b = 0; b < blocks.size(); b += 34) {
    const uint16_t h = random_half();
    std::memcpy(&blocks[b], &h, 2);
    for (size_t i = 2; i < 34; ++i) blocks[b + i] = static_cast<uint8_t>(rng.next_u64());
  }
  std::vector<float> want(static_cast<size_t>(n));
  dequantize_row_q8_0(blocks.data(), want.data(), n);
  for (SimdTarget target : supported_simd_targets()) {
    ScopedSimdTarget scoped(target);
    std::vector<float> got(static_cast<size_t>(n), -1.0f);
    active_kernels().q8_0_row(blocks.data(), got.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(float_to_bits(got[static_cast<size_t>(i)]), float_to_bits(want[static_cast<size_t>(i)]))
          << simd_target_name(target) << " value " << i;
    }
  }
  for (int64_t hd : {32, 64, 128}) {
    for (int64_t block : {8, 16, 21, 32}) {
      std::vector<uint16_t> scales(static_cast<size_t>(hd / 32 * block));
      for (auto& s : scales) s = random_half();
      std::vector<int8_t> values(static_cast<size_t>(hd * block));
      for (auto& v : values) v = static_cast<int8_t>(rng.next_u64());
      std::vector<float> kt_want(values.size());
      for (int64_t d = 0; d < hd; ++d) {
        for (int64_t r = 0; r < block; ++r) {
          const size_t at = static_cast<size_t>(d * block + r);
          kt_want[at] = f16_to_f32(scales[static_cast<size_t>(d / 32 * block + r)]) * static_cast<float>(values[at]);
        }
      }
      for (SimdTarget target : supported_simd_targets()) {
        ScopedSimdTarget scoped(target);
        std::vector<float> got(values.size(), -1.0f);
        active_kernels().q8_0_columns(scales.data(), values.data(), hd, block, got.data());
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(float_to_bits(got[i]), float_to_bits(kt_want[i]))
              << simd_target_name(target) << " head_dim " << hd << " block " << block << " at " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace llms
