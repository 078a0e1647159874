// Encoding of the k-quant super-blocks we write (Q3_K, Q4_K, Q5_K, Q6_K) and of the Q8_K
// activation format. Layouts and rules: block_formats.h.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/block_formats.h"
#include "quant/half.h"
#include "quant/k_quant_search.h"
#include "quant/quant_traits.h"

namespace llms {
namespace {

int nearest_int(float v) { return static_cast<int>(std::nearbyint(v)); }

// The 8 sub-blocks of a Q4_K or Q5_K super-block (levels 0..nmax): per sub-block
// (scale, min) searches, then 6-bit quantization of those against the super-block's
// d and dmin, then the final levels against the scales as stored (so the rounding of
// the scales is accounted for).
struct KNibbles {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t levels[kQK_K];
};

KNibbles quantize_k_nibbles(const float* x, const float* imp, int nmax) {
  KNibbles out;
  float sum_x2 = 0.0f;
  for (int i = 0; i < kQK_K; ++i) sum_x2 += x[i] * x[i];
  const float av_x = std::sqrt(sum_x2 / kQK_K);
  float scales[8], mins[8], w[32];
  for (int j = 0; j < 8; ++j) {
    // Weighting by magnitude (plus the block's RMS) protects the large values, which
    // carry most of a dot product.
    // Importance from data instead, where given.
    for (int l = 0; l < 32; ++l) w[l] = imp != nullptr ? imp[32 * j + l] : av_x + std::fabs(x[32 * j + l]);
    scales[j] = search_scale_min(x + 32 * j, w, 32, nmax, &mins[j], out.levels + 32 * j);
  }
  const float max_scale = *std::max_element(scales, scales + 8);
  const float max_min = *std::max_element(mins, mins + 8);
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = static_cast<uint8_t>(std::min(63, nearest_int(inv_scale * scales[j])));
    lm[j] = static_cast<uint8_t>(std::min(63, nearest_int(inv_min * mins[j])));
  }
  q4k_pack_scales(ls, lm, out.scales);
  out.d = f32_to_f16(max_scale / 63.0f);
  out.dmin = f32_to_f16(max_min / 63.0f);
  const float d = f16_to_f32(out.d), dmin = f16_to_f32(out.dmin);
  for (int j = 0; j < 8; ++j) {
    const float ds = d * static_cast<float>(ls[j]), dm = dmin * static_cast<float>(lm[j]);
    for (int l = 0; l < 32; ++l) {
      const int q = ds == 0.0f ? 0 : nearest_int((x[32 * j + l] + dm) / ds);
      out.levels[32 * j + l] = static_cast<uint8_t>(std::clamp(q, 0, nmax));
    }
  }
  return out;
}

void quantize_q4_k_block(const float* x, const float* imp, BlockQ4_K* b) {
  const KNibbles k = quantize_k_nibbles(x, imp, 15);
  b->d = k.d, b->dmin = k.dmin;
  std::memcpy(b->scales, k.scales, 12);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) b->qs[32 * c + l] = static_cast<uint8_t>(k.levels[64 * c + l] | (k.levels[64 * c + 32 + l] << 4));
}

// As Q4_K with levels 0..31: element 64c + 32u + l keeps its fifth bit in bit 2c + u
// of qh[l].
void quantize_q5_k_block(const float* x, const float* imp, BlockQ5_K* b) {
  const KNibbles k = quantize_k_nibbles(x, imp, 31);
  b->d = k.d, b->dmin = k.dmin;
  std::memcpy(b->scales, k.scales, 12);
  std::memset(b->qh, 0, sizeof(b->qh));
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      const int lo = k.levels[64 * c + l], hi = k.levels[64 * c + 32 + l];
      b->qs[32 * c + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      b->qh[l] = static_cast<uint8_t>(b->qh[l] | ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
    }
  }
}

// 16 sub-blocks of 16, each searched for its symmetric scale with levels -4..3; the
// scales quantized to 6 bits (-32..31, the largest magnitude to -32) against d; the
// levels against the scales as stored. Level q + 4 keeps its low 2 bits in qs and its
// third bit in hmask (see BlockQ3_K).
void quantize_q3_k_block(const float* x, BlockQ3_K* b) {
  float scales[16];
  int8_t tmp[16];
  float max_scale = 0.0f, max_abs = 0.0f;
  for (int j = 0; j < 16; ++j) {
    scales[j] = search_scale_symmetric(x + 16 * j, 16, 4, tmp);
    if (std::fabs(scales[j]) > max_abs) max_abs = std::fabs(scales[j]), max_scale = scales[j];
  }
  uint8_t v[16], levels[kQK_K];
  std::fill(levels, levels + kQK_K, 4);
  if (max_abs == 0.0f) {
    b->d = 0;
    std::fill(v, v + 16, 32);
  } else {
    const float iscale = -32.0f / max_scale;
    b->d = f32_to_f16(1.0f / iscale);
    const float d = f16_to_f32(b->d);
    for (int j = 0; j < 16; ++j) {
      const int s = std::clamp(nearest_int(iscale * scales[j]), -32, 31);
      v[j] = static_cast<uint8_t>(s + 32);
      const float dd = d * static_cast<float>(s);
      for (int l = 0; l < 16; ++l) {
        const int q = dd == 0.0f ? 0 : std::clamp(nearest_int(x[16 * j + l] / dd), -4, 3);
        levels[16 * j + l] = static_cast<uint8_t>(q + 4);
      }
    }
  }
  q3k_pack_scales(v, b->scales);
  std::memset(b->qs, 0, sizeof(b->qs));
  std::memset(b->hmask, 0, sizeof(b->hmask));
  for (int e = 0; e < kQK_K; ++e) {
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    b->qs[32 * h + l] = static_cast<uint8_t>(b->qs[32 * h + l] | ((levels[e] & 3) << (2 * k)));
    if (levels[e] & 4) b->hmask[l] = static_cast<uint8_t>(b->hmask[l] | (1 << (4 * h + k)));
  }
}

void quantize_q6_k_block(const float* x, BlockQ6_K* b) {
  float scales[16];
  int8_t tmp[16];
  float max_scale = 0.0f, max_abs = 0.0f;
  for (int j = 0; j < 16; ++j) {
    scales[j] = search_scale_symmetric(x + 16 * j, 16, 32, tmp);
    if (std::fabs(scales[j]) > max_abs) {
      max_abs = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  uint8_t levels[kQK_K];
  if (max_abs == 0.0f) {
    std::fill(b->scales, b->scales + 16, 0);
    b->d = 0;
    std::fill(levels, levels + kQK_K, 32);
  } else {
    // The largest sub-block scale maps to -128, the longer side of int8.
    const float iscale = -128.0f / max_scale;
    b->d = f32_to_f16(1.0f / iscale);
    const float d = f16_to_f32(b->d);
    for (int j = 0; j < 16; ++j) {
      b->scales[j] = static_cast<int8_t>(std::clamp(nearest_int(iscale * scales[j]), -128, 127));
      const float dd = d * static_cast<float>(b->scales[j]);
      for (int l = 0; l < 16; ++l) {
        const int q = dd == 0.0f ? 0 : std::clamp(nearest_int(x[16 * j + l] / dd), -32, 31);
        levels[16 * j + l] = static_cast<uint8_t>(q + 32);
      }
    }
  }
  for (int h = 0; h < 2; ++h) {
    const uint8_t* q = levels + 128 * h;
    for (int l = 0; l < 32; ++l) {
      b->ql[64 * h + l] = static_cast<uint8_t>((q[l] & 0xF) | ((q[l + 64] & 0xF) << 4));
      b->ql[64 * h + 32 + l] = static_cast<uint8_t>((q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4));
      b->qh[32 * h + l] =
          static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) | ((q[l + 96] >> 4) << 6));
    }
  }
}

}  // namespace

void quantize_row_q4_k(const float* src, const float* imp, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) quantize_q4_k_block(src + i * kQK_K, imp != nullptr ? imp + i * kQK_K : nullptr, b + i);
}

void quantize_row_q5_k(const float* src, const float* imp, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) quantize_q5_k_block(src + i * kQK_K, imp != nullptr ? imp + i * kQK_K : nullptr, b + i);
}

void quantize_row_q3_k(const float* src, const float* imp, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ3_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) quantize_q3_k_block(src + i * kQK_K, b + i);
}

void quantize_row_q6_k(const float* src, const float* imp, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) quantize_q6_k_block(src + i * kQK_K, b + i);
}

void quantize_row_q8_k(const float* src, const float* imp, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i, src += kQK_K) {
    float amax = 0.0f;
    for (int e = 0; e < kQK_K; ++e) amax = std::max(amax, std::fabs(src[e]));
    const float iscale = amax > 0.0f ? 127.0f / amax : 0.0f;
    b[i].d = amax > 0.0f ? 1.0f / iscale : 0.0f;
    for (int e = 0; e < kQK_K; ++e) b[i].qs[e] = static_cast<int8_t>(std::clamp(nearest_int(iscale * src[e]), -127, 127));
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b[i].qs[16 * j + l];
      b[i].bsums[j] = static_cast<int16_t>(sum);
    }
  }
}

}  // namespace llms
