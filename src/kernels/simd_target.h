// Runtime choice of the SIMD instruction set the kernels use. Each kernel is compiled
// once per target (scalar, AVX2+FMA+F16C, AVX-512 with VNNI) and the best target the
// CPU supports is picked once, on first use, and logged. LLMSERVE_SIMD=scalar|avx2|avx512
// in the environment caps the choice (useful to compare targets in production).
//
// Thread-safety: reading the active target is safe from any thread. ScopedSimdTarget
// changes a process-wide setting: use it only in tests and benchmarks, while no
// kernel runs on another thread.
#pragma once

#include <vector>

namespace llms {

enum class SimdTarget { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

inline constexpr int kNumSimdTargets = 3;

const char* simd_target_name(SimdTarget target);
// Name of the active target: "scalar", "avx2" or "avx512".
const char* simd_target_name();

SimdTarget active_simd_target();
bool simd_target_supported(SimdTarget target);
// Every target this CPU can run, scalar first.
std::vector<SimdTarget> supported_simd_targets();

// Forces `target` (which must be supported) until destruction, then restores the
// previous one.
class ScopedSimdTarget {
 public:
  explicit ScopedSimdTarget(SimdTarget target);
  ~ScopedSimdTarget();
  ScopedSimdTarget(const ScopedSimdTarget&) = delete;
  ScopedSimdTarget& operator=(const ScopedSimdTarget&) = delete;

 private:
  SimdTarget previous_;
};

}  // namespace llms
