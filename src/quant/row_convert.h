// Row conversions between float and the stored tensor types: the scalar reference
// definitions of every format's decoding (and encoding where supported), looked up in
// the traits table (quant_traits.h). Kernels use their own SIMD paths and are tested
// against these.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "tensor/dtype.h"

namespace llms {

// True when dequantize_row() handles `type`: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS.
bool can_dequantize(DType type);
// True when quantize_row() can produce `type`: all of those but Q2_K.
bool can_quantize(DType type);

// dst[0..n) = decode(src); n is a multiple of the type's block size.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);
// dst = encode(src[0..n)); dst holds dtype_row_bytes(type, n) bytes.
void quantize_row(DType type, const float* src, void* dst, int64_t n);
// As quantize_row, for values written while serving (the KV cache): Q8_0 rounds to
// nearest at scale amax / 127 in one pass (quantize_row_q8_0_nearest) instead of
// searching 33 scales per block, which costs about 66 passes over the block; the
// other types as quantize_row.
void quantize_row_nearest(DType type, const float* src, void* dst, int64_t n);
// As quantize_row, with imp[0..n) the importance of each element (the mean squared
// activation it multiplies, from `llmserve imatrix`): Q8_0, Q4_0, Q5_0, IQ4_NL,
// IQ4_XS, Q4_K and Q5_K choose their scales (and mins) to minimise the
// importance-weighted squared error; the other types ignore it. imp may be null.
void quantize_row_weighted(DType type, const float* src, const float* imp, void* dst, int64_t n);

}  // namespace llms
