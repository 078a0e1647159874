// CPU feature checks that every compiler we build with understands: clang before 15
// does not know "f16c" in __builtin_cpu_supports, so F16C comes from CPUID directly.
//
// Thread-safety: pure functions.
#pragma once

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace llms {

// F16C and AVX (the 256-bit half-float conversions).
inline bool cpu_has_f16c() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0 && (c & bit_AVX) != 0;
#else
  return false;
#endif
}

}  // namespace llms
