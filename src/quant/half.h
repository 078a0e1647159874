// Scalar conversions between float and the 16-bit float formats of GGUF tensors:
// IEEE binary16 ("f16") and bfloat16 ("bf16"), both rounding to nearest even.
// These are the reference definitions; SIMD conversions in kernels/ must agree bit
// for bit.
#pragma once

#include <cstdint>
#include <cstring>

namespace llms {

inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  if (exp == 0x1F) return bits_to_float(sign | 0x7F800000 | (mant << 13));  // inf / nan
  if (exp == 0) {
    if (mant == 0) return bits_to_float(sign);
    // Subnormal: value = mant * 2^-24.
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while ((mant & 0x400) == 0);
    mant &= 0x3FF;
    return bits_to_float(sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13));
  }
  return bits_to_float(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t u = float_to_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000;
  const uint32_t abs = u & 0x7FFFFFFF;
  if (abs >= 0x7F800000) {  // inf or nan (keep nan quiet and non-zero)
    return static_cast<uint16_t>(sign | 0x7C00 | (abs > 0x7F800000 ? 0x200 | ((abs >> 13) & 0x3FF) : 0));
  }
  if (abs >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // rounds to >= 65520: inf
  if (abs < 0x38800000) {  // below the smallest normal f16 (2^-14): subnormal or zero
    if (abs < 0x33000000) return static_cast<uint16_t>(sign);  // < 2^-25 rounds to zero
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7FFFFF) | 0x800000;
    const uint32_t s = 126 - exp;  // value / 2^-24 = mant >> s, with s in [14, 24]
    uint32_t h = mant >> s;
    const uint32_t rem = mant & ((1u << s) - 1);
    const uint32_t half = 1u << (s - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  // Normal: rebias exponent, round mantissa from 23 to 10 bits (nearest even).
  uint32_t h = ((abs >> 13) - ((127 - 15) << 10));
  const uint32_t rem = abs & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

inline float bf16_to_f32(uint16_t b) { return bits_to_float(static_cast<uint32_t>(b) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = float_to_bits(f);
  if ((u & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet nan
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

}  // namespace llms
