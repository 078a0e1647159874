// Kernels compiled for the portable scalar target: the lane-by-lane definition of what every SIMD target computes.
// The bodies live in the *-inl.h files and are compiled once per target inside the
// namespace llms::scalar; see simd_avx512-inl.h for the vector operations they use.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.h"
#include "quant/half.h"

namespace llms {
namespace scalar {
#include "kernels/simd_scalar-inl.h"
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
}  // namespace scalar

const KernelTable& scalar_kernels() {
  static const KernelTable table = scalar::make_kernel_table();
  return table;
}

}  // namespace llms
