// One row of facts per stored tensor type: its block geometry, how to decode it to
// floats, how to encode floats into it (where supported), and which activation
// format an integer dot product pairs it with. row_convert.h is the front door most
// callers use; kernels and tools that iterate over types read this table.
//
// Thread-safety: the table is immutable; every function is pure and may run on any
// thread.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/dtype.h"

namespace llms {

// dst[0..n) = decode(src); n is a multiple of the block size.
using ToFloatFn = void (*)(const void* src, float* dst, int64_t n);
// dst = encode(src[0..n)); dst holds n / block_size blocks.
// imp: per-element importance weights of the row (the mean squared activation each
// weight multiplies), or null; the encoders that search their scales minimise the
// importance-weighted squared error with it.
using FromFloatFn = void (*)(const float* src, const float* imp, void* dst, int64_t n);

struct QuantTraits {
  DType type;
  int64_t block_size;    // elements per block
  int64_t type_size;     // bytes per block
  ToFloatFn to_float;    // never null for a type in the table
  FromFloatFn from_float;  // null when we do not encode this type
  DType vec_dot_type;    // activation format of its dot products (F32 for float types)
};

// The entry for `type`, or null for types that cannot be decoded here.
const QuantTraits* quant_traits(DType type);
// Every entry, in the order of DType ids.
std::span<const QuantTraits> all_quant_traits();

// Per-type codecs (src/dst are arrays of the block structs in block_formats.h).
void dequantize_row_q4_0(const void* src, float* dst, int64_t n);
void dequantize_row_q4_1(const void* src, float* dst, int64_t n);
void dequantize_row_q5_0(const void* src, float* dst, int64_t n);
void dequantize_row_q5_1(const void* src, float* dst, int64_t n);
void dequantize_row_q8_0(const void* src, float* dst, int64_t n);
void dequantize_row_q8_1(const void* src, float* dst, int64_t n);
void dequantize_row_q2_k(const void* src, float* dst, int64_t n);
void dequantize_row_q3_k(const void* src, float* dst, int64_t n);
void dequantize_row_q4_k(const void* src, float* dst, int64_t n);
void dequantize_row_q5_k(const void* src, float* dst, int64_t n);
void dequantize_row_q6_k(const void* src, float* dst, int64_t n);
void dequantize_row_q8_k(const void* src, float* dst, int64_t n);
void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n);
void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n);

// Round-to-nearest block quantizers: Q8_0 and Q4_0 map the largest magnitude of each
// block of 32 to the end of the integer range.
void quantize_row_q4_0(const float* src, const float* imp, void* dst, int64_t n);
void quantize_row_q5_0(const float* src, const float* imp, void* dst, int64_t n);
void quantize_row_q8_0(const float* src, const float* imp, void* dst, int64_t n);
// Q8_0 in one pass: scale amax / 127, every value rounded to nearest (ties to even) at
// the unrounded scale, as the format's reference encoder does; no scale search.
void quantize_row_q8_0_nearest(const float* src, void* dst, int64_t n);
// Q4_1 and Q5_1 span each block's minimum to maximum.
void quantize_row_q4_1(const float* src, const float* imp, void* dst, int64_t n);
void quantize_row_q5_1(const float* src, const float* imp, void* dst, int64_t n);
void quantize_row_q8_1(const float* src, const float* imp, void* dst, int64_t n);
// The k-quants search each sub-block's scale (and min) for the least weighted squared
// error (k_quant_search.h), then quantize the sub-block scales to the super-block.
void quantize_row_q3_k(const float* src, const float* imp, void* dst, int64_t n);
void quantize_row_q4_k(const float* src, const float* imp, void* dst, int64_t n);
void quantize_row_q5_k(const float* src, const float* imp, void* dst, int64_t n);
void quantize_row_q6_k(const float* src, const float* imp, void* dst, int64_t n);
// IQ4_NL and IQ4_XS search each block's (sub-block's) scale for the least weighted
// squared error against the 16 levels of their codebook.
void quantize_row_iq4_nl(const float* src, const float* imp, void* dst, int64_t n);
void quantize_row_iq4_xs(const float* src, const float* imp, void* dst, int64_t n);
void quantize_row_q8_k(const float* src, const float* imp, void* dst, int64_t n);

}  // namespace llms
