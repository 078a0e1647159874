// Decoding and encoding of the non-linear 4-bit formats IQ4_NL (blocks of 32, one
// scale) and IQ4_XS (super-blocks of 256, a 6-bit scale per 32). Layouts and rules:
// block_formats.h.
#include <algorithm>
#include <cmath>

#include "quant/block_formats.h"
#include "quant/half.h"
#include "quant/quant_traits.h"

namespace llms {
namespace {

int nearest_int(float v) { return static_cast<int>(std::nearbyint(v)); }

// The code whose level is nearest to v (levels in increasing order).
int nearest_code(float v) {
  const int8_t* it = std::lower_bound(kIq4Values, kIq4Values + 16, v, [](int8_t level, float x) { return level < x; });
  if (it == kIq4Values) return 0;
  if (it == kIq4Values + 16) return 15;
  const int hi = static_cast<int>(it - kIq4Values);
  return v - static_cast<float>(kIq4Values[hi - 1]) <= static_cast<float>(kIq4Values[hi]) - v ? hi - 1 : hi;
}

// x[i] ~ scale * kIq4Values[q[i]] over n values with weights w: candidate scales
// around the one that maps the largest magnitude to the level -127, each refit by
// weighted least squares to its codes; returns the scale of the least error.
float search_codebook_scale(const float* x, const float* w, int n, uint8_t* q) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
  }
  if (amax == 0.0f) {
    std::fill(q, q + n, static_cast<uint8_t>(nearest_code(0.0f)));
    return 0.0f;
  }
  uint8_t cand[32];
  float best_scale = 0.0f, best_score = -1.0f;
  // The weighted error of the least-squares scale sum(w x l) / sum(w l^2) is
  // sum(w x^2) - sum(w x l)^2 / sum(w l^2): the largest second term wins.
  for (int k = -10; k <= 10; ++k) {
    const float iscale = (-127.0f + static_cast<float>(k)) / max;
    float sum_xl = 0.0f, sum_l2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      cand[i] = static_cast<uint8_t>(nearest_code(iscale * x[i]));
      const float l = kIq4Values[cand[i]];
      sum_xl += w[i] * x[i] * l;
      sum_l2 += w[i] * l * l;
    }
    if (sum_l2 <= 0.0f) continue;
    const float score = sum_xl * sum_xl / sum_l2;
    if (score > best_score) {
      best_score = score;
      best_scale = sum_xl / sum_l2;
      std::copy(cand, cand + n, q);
    }
  }
  return best_scale;
}

// Weights that favour large values, which carry most of a dot product; the given
// importance where there is one.
void importance(const float* x, const float* imp, int n, float* w) {
  if (imp != nullptr) {
    std::copy(imp, imp + n, w);
    return;
  }
  float sum_x2 = 0.0f;
  for (int i = 0; i < n; ++i) sum_x2 += x[i] * x[i];
  const float mean_x2 = sum_x2 / static_cast<float>(n);
  for (int i = 0; i < n; ++i) w[i] = mean_x2 + x[i] * x[i];
}

// Codes of n values against `scale` as stored, low nibble first as in BlockQ4_0.
void pack_codes(const float* x, float scale, uint8_t* qs) {
  const float id = scale != 0.0f ? 1.0f / scale : 0.0f;
  for (int l = 0; l < 16; ++l) {
    const int lo = nearest_code(x[l] * id), hi = nearest_code(x[l + 16] * id);
    qs[l] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

}  // namespace

void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ4_NL*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int l = 0; l < 16; ++l) {
      dst[l] = d * static_cast<float>(kIq4Values[b[i].qs[l] & 0xF]);
      dst[l + 16] = d * static_cast<float>(kIq4Values[b[i].qs[l] >> 4]);
    }
  }
}

void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ4_XS*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < 8; ++j, dst += 32) {
      const float dl = d * static_cast<float>(iq4xs_scale(b[i], j));
      const uint8_t* qs = b[i].qs + 16 * j;
      for (int l = 0; l < 16; ++l) {
        dst[l] = dl * static_cast<float>(kIq4Values[qs[l] & 0xF]);
        dst[l + 16] = dl * static_cast<float>(kIq4Values[qs[l] >> 4]);
      }
    }
  }
}

void quantize_row_iq4_nl(const float* src, const float* imp, void* dst, int64_t n) {
  auto* b = static_cast<BlockIQ4_NL*>(dst);
  float w[kQK];
  uint8_t q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    importance(src, imp != nullptr ? imp + i * kQK : nullptr, kQK, w);
    b[i].d = f32_to_f16(search_codebook_scale(src, w, kQK, q));
    pack_codes(src, f16_to_f32(b[i].d), b[i].qs);
  }
}

// Each sub-block's own best scale, then those scales quantized to 6 bits against the
// super-block's d (the largest magnitude to -32, the longer side), then the codes
// against the scales as stored.
void quantize_row_iq4_xs(const float* src, const float* imp, void* dst, int64_t n) {
  auto* b = static_cast<BlockIQ4_XS*>(dst);
  float w[32], scales[8];
  uint8_t q[32];
  for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K) {
    float max_abs = 0.0f, max_scale = 0.0f;
    for (int j = 0; j < 8; ++j) {
      importance(src + 32 * j, imp != nullptr ? imp + i * kQK_K + 32 * j : nullptr, 32, w);
      scales[j] = search_codebook_scale(src + 32 * j, w, 32, q);
      if (std::fabs(scales[j]) > max_abs) max_abs = std::fabs(scales[j]), max_scale = scales[j];
    }
    b[i].d = f32_to_f16(max_abs > 0.0f ? max_scale / -32.0f : 0.0f);
    const float d = f16_to_f32(b[i].d);
    b[i].scales_h = 0;
    std::fill(b[i].scales_l, b[i].scales_l + 4, 0);
    for (int j = 0; j < 8; ++j) {
      const int ls = d != 0.0f ? std::clamp(nearest_int(scales[j] / d), -32, 31) : 0;
      const int v = ls + 32;
      b[i].scales_l[j / 2] = static_cast<uint8_t>(b[i].scales_l[j / 2] | ((v & 0xF) << (4 * (j % 2))));
      b[i].scales_h = static_cast<uint16_t>(b[i].scales_h | ((v >> 4) << (2 * j)));
      pack_codes(src + 32 * j, d * static_cast<float>(ls), b[i].qs + 16 * j);
    }
  }
}

}  // namespace llms
