#include "kernels/simd_target.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "base/check.h"
#include "base/cpu_features.h"
#include "base/log.h"

namespace llms {
namespace {

bool cpu_has_avx2() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
#else
  return false;
#endif
}

bool cpu_has_avx512() {
#if defined(__x86_64__)
  return cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

std::string cpu_features() {
  std::string s;
#if defined(__x86_64__)
#define LLMS_FEATURE(f) \
  if (__builtin_cpu_supports(f)) s += std::string(s.empty() ? "" : " ") + f;
  LLMS_FEATURE("avx2") LLMS_FEATURE("fma")
  if (cpu_has_f16c()) s += std::string(s.empty() ? "" : " ") + "f16c";
  LLMS_FEATURE("avx512f") LLMS_FEATURE("avx512bw")
  LLMS_FEATURE("avx512vl") LLMS_FEATURE("avx512vnni") LLMS_FEATURE("avx512bf16")
#undef LLMS_FEATURE
#endif
  return s.empty() ? "none" : s;
}

SimdTarget initial_target() {
  SimdTarget best = cpu_has_avx512() ? SimdTarget::kAvx512 : cpu_has_avx2() ? SimdTarget::kAvx2 : SimdTarget::kScalar;
  if (const char* env = std::getenv("LLMSERVE_SIMD")) {
    for (int t = 0; t < kNumSimdTargets; ++t) {
      const auto target = static_cast<SimdTarget>(t);
      if (std::strcmp(env, simd_target_name(target)) == 0 && target < best) best = target;
    }
  }
  log_info("kernels: SIMD target {} (cpu: {})", simd_target_name(best), cpu_features());
  return best;
}

std::atomic<SimdTarget>& target_ref() {
  static std::atomic<SimdTarget> target{initial_target()};
  return target;
}

}  // namespace

const char* simd_target_name(SimdTarget target) {
  switch (target) {
    case SimdTarget::kScalar: return "scalar";
    case SimdTarget::kAvx2: return "avx2";
    case SimdTarget::kAvx512: return "avx512";
  }
  return "?";
}

const char* simd_target_name() { return simd_target_name(active_simd_target()); }

SimdTarget active_simd_target() { return target_ref().load(std::memory_order_relaxed); }

bool simd_target_supported(SimdTarget target) {
  switch (target) {
    case SimdTarget::kScalar: return true;
    case SimdTarget::kAvx2: return cpu_has_avx2();
    case SimdTarget::kAvx512: return cpu_has_avx512();
  }
  return false;
}

std::vector<SimdTarget> supported_simd_targets() {
  std::vector<SimdTarget> out;
  for (int t = 0; t < kNumSimdTargets; ++t)
    if (simd_target_supported(static_cast<SimdTarget>(t))) out.push_back(static_cast<SimdTarget>(t));
  return out;
}

ScopedSimdTarget::ScopedSimdTarget(SimdTarget target) : previous_(active_simd_target()) {
  LLMS_CHECK(simd_target_supported(target), std::string("SIMD target not supported here: ") + simd_target_name(target));
  target_ref().store(target, std::memory_order_relaxed);
}

ScopedSimdTarget::~ScopedSimdTarget() { target_ref().store(previous_, std::memory_order_relaxed); }

}  // namespace llms
