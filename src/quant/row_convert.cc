#include "quant/row_convert.h"

#include <string>

#include "base/check.h"
#include "quant/quant_traits.h"

namespace llms {

bool can_dequantize(DType type) { return quant_traits(type) != nullptr; }

bool can_quantize(DType type) {
  const QuantTraits* t = quant_traits(type);
  return t != nullptr && t->from_float != nullptr;
}

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
  const QuantTraits* t = quant_traits(type);
  LLMS_CHECK(t != nullptr, "dequantize_row: unsupported type " + std::string(dtype_name(type)));
  LLMS_DCHECK(n % t->block_size == 0, "dequantize_row: partial block");
  t->to_float(src, dst, n);
}

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
  const QuantTraits* t = quant_traits(type);
  LLMS_CHECK(t != nullptr && t->from_float != nullptr, "quantize_row: unsupported type " + std::string(dtype_name(type)));
  LLMS_DCHECK(n % t->block_size == 0, "quantize_row: partial block");
  t->from_float(src, nullptr, dst, n);
}

void quantize_row_nearest(DType type, const float* src, void* dst, int64_t n) {
  if (type != DType::kQ8_0) {
    quantize_row(type, src, dst, n);
    return;
  }
  LLMS_DCHECK(n % 32 == 0, "quantize_row_nearest: partial block");
  quantize_row_q8_0_nearest(src, dst, n);
}

void quantize_row_weighted(DType type, const float* src, const float* imp, void* dst, int64_t n) {
  const QuantTraits* t = quant_traits(type);
  LLMS_CHECK(t != nullptr && t->from_float != nullptr, "quantize_row: unsupported type " + std::string(dtype_name(type)));
  LLMS_DCHECK(n % t->block_size == 0, "quantize_row: partial block");
  t->from_float(src, imp, dst, n);
}

}  // namespace llms
