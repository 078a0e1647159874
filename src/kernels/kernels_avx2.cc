// Kernels compiled for the AVX2 + FMA + F16C target.
// The bodies live in the *-inl.h files and are compiled once per target inside the
// namespace llms::avx2; see simd_avx512-inl.h for the vector operations they use.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/kernel_table.h"
#include "quant/half.h"

#if defined(__x86_64__)
#if defined(__clang__)
// clang has no "#pragma GCC target"; this gives every function of the region the target.
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,bmi2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi2")
#endif

namespace llms {
namespace avx2 {
#include "kernels/simd_avx2-inl.h"
#include "kernels/matmul_tiles-inl.h"
#include "kernels/matmul_float-inl.h"
#include "kernels/matmul_q8_0-inl.h"
#include "kernels/matmul_q4_0-inl.h"
#include "kernels/matmul_q4_k-inl.h"
#include "kernels/matmul_q6_k-inl.h"
#include "kernels/matmul_q5_0-inl.h"
#include "kernels/matmul_q5_k-inl.h"
#include "kernels/matmul_q3_k-inl.h"
#include "kernels/matmul_iq4-inl.h"
#include "kernels/quantize_act-inl.h"
#include "kernels/ops-inl.h"
#include "kernels/attention_rows-inl.h"
#include "kernels/lora-inl.h"
#include "kernels/kernel_table-inl.h"
}  // namespace avx2
}  // namespace llms
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace llms {
// Outside the target region: only the table's functions need the target's ISA.
const KernelTable& avx2_kernels() {
  static const KernelTable table = avx2::make_kernel_table();
  return table;
}
}  // namespace llms
#else
namespace llms {
// Not an x86-64 build: the target is never supported, so this is never called.
const KernelTable& avx2_kernels() { return scalar_kernels(); }
}  // namespace llms
#endif
