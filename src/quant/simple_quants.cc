// Decoding and encoding of the block-of-32 formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q8_1). Layouts and rules: block_formats.h.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/block_formats.h"
#include "quant/half.h"
#include "quant/quant_traits.h"

namespace llms {
namespace {

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // little-endian host (x86-64, AArch64)
}

// Largest |x| and the element that has it (sign kept), over a block.
void block_extremes(const float* x, int n, float* amax, float* signed_max) {
  *amax = 0.0f;
  *signed_max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > *amax) {
      *amax = std::fabs(x[i]);
      *signed_max = x[i];
    }
  }
}

int nearest_int(float v) { return static_cast<int>(std::nearbyint(v)); }

// With importance weights w: levels q in [lo, hi] and a scale d (stored in F16) for x ~ d * q
// minimising sum w (x - d q)^2. Candidates map the largest magnitude to lo +- 0.1 k, each
// refit by weighted least squares; returns the F16 scale and writes q.
uint16_t weighted_symmetric_block(const float* x, const float* w, int n, int lo, int hi, int* q) {
  float amax, max;
  block_extremes(x, n, &amax, &max);
  if (amax == 0.0f) {
    std::fill(q, q + n, 0);
    return 0;
  }
  int cand[kQK];
  double best_err = INFINITY;
  uint16_t best = 0;
  for (int k = -10; k <= 10; ++k) {
    const float id = (static_cast<float>(lo) + 0.1f * static_cast<float>(k)) / max;
    double sxq = 0, sqq = 0;
    for (int j = 0; j < n; ++j) {
      cand[j] = std::clamp(nearest_int(x[j] * id), lo, hi);
      sxq += static_cast<double>(w[j]) * x[j] * cand[j];
      sqq += static_cast<double>(w[j]) * cand[j] * cand[j];
    }
    if (sqq <= 0) continue;
    const uint16_t dh = f32_to_f16(static_cast<float>(sxq / sqq));
    const double d = f16_to_f32(dh);
    double err = 0;
    for (int j = 0; j < n; ++j) err += w[j] * (x[j] - d * cand[j]) * (x[j] - d * cand[j]);
    if (err < best_err) best_err = err, best = dh, std::copy(cand, cand + n, q);
  }
  return best;
}

}  // namespace

void dequantize_row_q4_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * static_cast<float>((b[i].qs[j] & 0xF) - 8);
      dst[j + kQK / 2] = d * static_cast<float>((b[i].qs[j] >> 4) - 8);
    }
  }
}

void dequantize_row_q4_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * static_cast<float>(b[i].qs[j] & 0xF) + m;
      dst[j + kQK / 2] = d * static_cast<float>(b[i].qs[j] >> 4) + m;
    }
  }
}

void dequantize_row_q5_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    const uint32_t qh = load_u32(b[i].qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (b[i].qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1) << 4);
      const int hi = (b[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
      dst[j] = d * static_cast<float>(lo - 16);
      dst[j + kQK / 2] = d * static_cast<float>(hi - 16);
    }
  }
}

void dequantize_row_q5_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    const uint32_t qh = load_u32(b[i].qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (b[i].qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1) << 4);
      const int hi = (b[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
      dst[j] = d * static_cast<float>(lo) + m;
      dst[j + kQK / 2] = d * static_cast<float>(hi) + m;
    }
  }
}

void dequantize_row_q8_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) dst[j] = d * static_cast<float>(b[i].qs[j]);
  }
}

void dequantize_row_q8_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) dst[j] = d * static_cast<float>(b[i].qs[j]);
  }
}

// The element of largest magnitude maps to -8 (its sign chosen so), which uses the
// whole asymmetric range [-8, 7] and stores that element exactly.
// With importance weights, the weighted search of weighted_symmetric_block instead.
void quantize_row_q4_0(const float* src, const float* imp, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  if (imp != nullptr) {
    int q[kQK];
    for (int64_t i = 0; i < n / kQK; ++i, src += kQK, imp += kQK) {
      b[i].d = weighted_symmetric_block(src, imp, kQK, -8, 7, q);
      for (int j = 0; j < kQK / 2; ++j) b[i].qs[j] = static_cast<uint8_t>((q[j] + 8) | ((q[j + 16] + 8) << 4));
    }
    return;
  }
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float amax, max;
    block_extremes(src, kQK, &amax, &max);
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = std::clamp(nearest_int(src[j] * id) + 8, 0, 15);
      const int hi = std::clamp(nearest_int(src[j + kQK / 2] * id) + 8, 0, 15);
      b[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

// As Q4_0 with the range [-16, 15]; the fifth bit of element j is bit j of qh.
void quantize_row_q5_0(const float* src, const float* imp, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_0*>(dst);
  if (imp != nullptr) {
    int q[kQK];
    for (int64_t i = 0; i < n / kQK; ++i, src += kQK, imp += kQK) {
      b[i].d = weighted_symmetric_block(src, imp, kQK, -16, 15, q);
      uint32_t qh = 0;
      for (int j = 0; j < kQK / 2; ++j) {
        const int lo = q[j] + 16, hi = q[j + 16] + 16;
        b[i].qs[j] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        qh |= static_cast<uint32_t>(lo >> 4) << j | static_cast<uint32_t>(hi >> 4) << (j + 16);
      }
      std::memcpy(b[i].qh, &qh, 4);
    }
    return;
  }
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float amax, max;
    block_extremes(src, kQK, &amax, &max);
    const float d = max / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = std::clamp(nearest_int(src[j] * id) + 16, 0, 31);
      const int hi = std::clamp(nearest_int(src[j + kQK / 2] * id) + 16, 0, 31);
      b[i].qs[j] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      qh |= static_cast<uint32_t>(lo >> 4) << j | static_cast<uint32_t>(hi >> 4) << (j + 16);
    }
    std::memcpy(b[i].qh, &qh, 4);
  }
}

namespace {

// Levels 0..nmax of one block of 32 between its minimum (m) and maximum: x ~ d * q + m.
void min_max_levels(const float* x, int nmax, uint16_t* d_out, uint16_t* m_out, int* q) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < kQK; ++j) lo = std::min(lo, x[j]), hi = std::max(hi, x[j]);
  *d_out = f32_to_f16((hi - lo) / static_cast<float>(nmax));
  *m_out = f32_to_f16(lo);
  // Levels against d and m as stored.
  const float d = f16_to_f32(*d_out), m = f16_to_f32(*m_out);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK; ++j) q[j] = std::clamp(nearest_int((x[j] - m) * id), 0, nmax);
}

}  // namespace

void quantize_row_q4_1(const float* src, const float* imp, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_1*>(dst);
  int q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    min_max_levels(src, 15, &b[i].d, &b[i].m, q);
    for (int j = 0; j < kQK / 2; ++j) b[i].qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
  }
}

void quantize_row_q5_1(const float* src, const float* imp, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_1*>(dst);
  int q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    min_max_levels(src, 31, &b[i].d, &b[i].m, q);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      b[i].qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
      qh |= static_cast<uint32_t>(q[j] >> 4) << j | static_cast<uint32_t>(q[j + 16] >> 4) << (j + 16);
    }
    std::memcpy(b[i].qh, &qh, 4);
  }
}

// Round to nearest is not the least-error choice: each block tries scales around
// amax / 127, refits the scale to its codes by least squares (in the f16 it is stored
// in) and keeps the pair with the smallest squared error (weighted by importance where
// given). About 12% less error than plain round-to-nearest on trained weights; same format.
void quantize_row_q8_0(const float* src, const float* imp, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  int8_t q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    const float* w = imp != nullptr ? imp + i * kQK : nullptr;
    float amax, max;
    block_extremes(src, kQK, &amax, &max);
    double best_err = INFINITY;
    for (int k = -16; k <= 16; ++k) {
      const float d0 = amax / (127.0f + 0.25f * static_cast<float>(k));
      const float id = d0 != 0.0f ? 1.0f / d0 : 0.0f;
      double sxq = 0, sqq = 0;
      for (int j = 0; j < kQK; ++j) {
        q[j] = static_cast<int8_t>(std::clamp(nearest_int(src[j] * id), -127, 127));
        const double wj = w != nullptr ? w[j] : 1.0;
        sxq += wj * src[j] * q[j];
        sqq += wj * q[j] * q[j];
      }
      const uint16_t dh = f32_to_f16(sqq > 0 ? static_cast<float>(sxq / sqq) : 0.0f);
      const float d = f16_to_f32(dh);
      double err = 0;
      for (int j = 0; j < kQK; ++j) {
        const double r = src[j] - static_cast<double>(d) * q[j];
        err += (w != nullptr ? w[j] : 1.0) * r * r;
      }
      if (err < best_err) {
        best_err = err;
        b[i].d = dh;
        std::memcpy(b[i].qs, q, sizeof(q));
      }
    }
  }
}

namespace {

// Without a call per value (nearbyint is one on the baseline target), so the loop
// vectorizes: 1.5 * 2^23 added to |v| < 2^22 leaves round-to-nearest-even(v) in the
// sum's low mantissa bits, as nearbyint gives in the default rounding mode.
int nearest_int_fast(float v) {
  const float f = v + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &f, 4);
  return (i & 0x007fffff) - 0x00400000;
}

}  // namespace

void quantize_row_q8_0_nearest(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float amax = 0.0f;  // not block_extremes(): its branch per value keeps this loop scalar
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(src[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) b[i].qs[j] = static_cast<int8_t>(std::clamp(nearest_int_fast(src[j] * id), -127, 127));
  }
}

void quantize_row_q8_1(const float* src, const float* imp, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float amax, max;
    block_extremes(src, kQK, &amax, &max);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      b[i].qs[j] = static_cast<int8_t>(std::clamp(nearest_int(src[j] * id), -127, 127));
      sum += b[i].qs[j];
    }
    b[i].d = f32_to_f16(d);
    b[i].s = f32_to_f16(d * static_cast<float>(sum));
  }
}

}  // namespace llms
