#include "quant/quant_traits.h"

#include <array>
#include <cstring>

#include "quant/half.h"

namespace llms {
namespace {

void f32_to_float(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }
void f32_from_float(const float* src, const float* /*imp*/, void* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }

// The scalar definitions (half.h); the kernels' F16 rows (kernels/convert.h) are the
// SIMD conversions, checked against these on every target.
void f16_to_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
}
void f16_from_float(const float* src, const float* /*imp*/, void* dst, int64_t n) {
  auto* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
}

void bf16_to_float(const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
}
void bf16_from_float(const float* src, const float* /*imp*/, void* dst, int64_t n) {
  auto* d = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
}

constexpr int64_t kQK32 = 32, kQK256 = 256;

// The vec-dot partners follow GGUF practice: the simple formats pair with Q8_0 (Q8_1
// for the ones with a min), the k-quants with Q8_K, float types with F32 rows.
constexpr std::array<QuantTraits, 17> kTraits = {{
    {DType::kF32, 1, 4, f32_to_float, f32_from_float, DType::kF32},
    {DType::kF16, 1, 2, f16_to_float, f16_from_float, DType::kF32},
    {DType::kQ4_0, kQK32, 18, dequantize_row_q4_0, quantize_row_q4_0, DType::kQ8_0},
    {DType::kQ4_1, kQK32, 20, dequantize_row_q4_1, quantize_row_q4_1, DType::kQ8_1},
    {DType::kQ5_0, kQK32, 22, dequantize_row_q5_0, quantize_row_q5_0, DType::kQ8_0},
    {DType::kQ5_1, kQK32, 24, dequantize_row_q5_1, quantize_row_q5_1, DType::kQ8_1},
    {DType::kQ8_0, kQK32, 34, dequantize_row_q8_0, quantize_row_q8_0, DType::kQ8_0},
    {DType::kQ8_1, kQK32, 36, dequantize_row_q8_1, quantize_row_q8_1, DType::kQ8_1},
    {DType::kQ2_K, kQK256, 84, dequantize_row_q2_k, nullptr, DType::kQ8_K},
    {DType::kQ3_K, kQK256, 110, dequantize_row_q3_k, quantize_row_q3_k, DType::kQ8_K},
    {DType::kQ4_K, kQK256, 144, dequantize_row_q4_k, quantize_row_q4_k, DType::kQ8_K},
    {DType::kQ5_K, kQK256, 176, dequantize_row_q5_k, quantize_row_q5_k, DType::kQ8_K},
    {DType::kQ6_K, kQK256, 210, dequantize_row_q6_k, quantize_row_q6_k, DType::kQ8_K},
    {DType::kQ8_K, kQK256, 292, dequantize_row_q8_k, quantize_row_q8_k, DType::kQ8_K},
    {DType::kIQ4_NL, kQK32, 18, dequantize_row_iq4_nl, quantize_row_iq4_nl, DType::kQ8_0},
    {DType::kIQ4_XS, kQK256, 136, dequantize_row_iq4_xs, quantize_row_iq4_xs, DType::kQ8_K},
    {DType::kBF16, 1, 2, bf16_to_float, bf16_from_float, DType::kF32},
}};

}  // namespace

const QuantTraits* quant_traits(DType type) {
  for (const auto& t : kTraits)
    if (t.type == type) return &t;
  return nullptr;
}

std::span<const QuantTraits> all_quant_traits() { return kTraits; }

}  // namespace llms
