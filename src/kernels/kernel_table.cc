#include "kernels/kernel_table.h"

namespace llms {

const KernelTable& active_kernels() {
  switch (active_simd_target()) {
    case SimdTarget::kAvx512: return avx512_kernels();
    case SimdTarget::kAvx2: return avx2_kernels();
    case SimdTarget::kScalar: break;
  }
  return scalar_kernels();
}

}  // namespace llms
