// Row conversions between floats and stored types on the active SIMD target, for the
// paths that convert many values while serving or while rewriting a model: the KV
// cache's F16 rows, F16 embedding rows, the quantizer's reads of F16 tensors. quant/
// keeps the scalar definitions (half.h, row_convert.h) and no SIMD; these give the same
// values (ops_test.cc checks every target against them).
//
// Thread-safety: pure functions over their arguments; any thread.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace llms {

// dst[i] = f16_to_f32(src[i]), exact for every half but NaNs, which stay NaN (quieted
// by the SIMD targets).
void f16_to_f32_row(const uint16_t* src, float* dst, int64_t n);
// dst[i] = f32_to_f16(src[i]) (nearest, ties to even), NaNs included.
void f32_to_f16_row(const float* src, uint16_t* dst, int64_t n);

// dequantize_row() (quant/row_convert.h), with F16 rows converted on the active target
// (f16_to_f32_row) and every other type by its scalar decoder.
void decode_row(DType type, const void* src, float* dst, int64_t n);

}  // namespace llms
