// Dispatch of convert.h to the active SIMD target (kernel_table.h).
#include "kernels/convert.h"

#include "kernels/kernel_table.h"
#include "quant/row_convert.h"

namespace llms {

void f16_to_f32_row(const uint16_t* src, float* dst, int64_t n) { active_kernels().f16_to_f32_row(src, dst, n); }

void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) { active_kernels().f32_to_f16_row(src, dst, n); }

void decode_row(DType type, const void* src, float* dst, int64_t n) {
  if (type == DType::kF16) {
    f16_to_f32_row(static_cast<const uint16_t*>(src), dst, n);
    return;
  }
  dequantize_row(type, src, dst, n);
}

}  // namespace llms
