#include "quant/row_convert.h"

#include <cstring>

#include "base/check.h"
#include "quant/half.h"

namespace llms {

bool can_dequantize(DType type) {
  switch (type) {
    case DType::kF32: case DType::kF16: case DType::kBF16: return true;
    default: return false;
  }
}

bool can_quantize(DType type) { return can_dequantize(type); }

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::kF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case DType::kBF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    default:
      LLMS_CHECK(false, std::string("dequantize_row: unsupported type ") + std::string(dtype_name(type)));
  }
}

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
  switch (type) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case DType::kF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    case DType::kBF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    default:
      LLMS_CHECK(false, std::string("quantize_row: unsupported type ") + std::string(dtype_name(type)));
  }
}

}  // namespace llms
