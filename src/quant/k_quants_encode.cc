// Encoding of the k-quant super-blocks we write (Q4_K, Q6_K) and of the Q8_K
// activation format. Layouts and rules: block_formats.h.
#include <algorithm>
#include <cmath>

#include "quant/block_formats.h"
#include "quant/half.h"
#include "quant/k_quant_search.h"
#include "quant/quant_traits.h"

namespace llms {
namespace {

int nearest_int(float v) { return static_cast<int>(std::nearbyint(v)); }

// One Q4_K super-block: per sub-block (scale, min) searches, then 6-bit quantization
// of those against the super-block's d and dmin, then the final levels against the
// scales as stored (so the rounding of the scales is accounted for).
void quantize_q4_k_block(const float* x, BlockQ4_K* b) {
  float sum_x2 = 0.0f;
  for (int i = 0; i < kQK_K; ++i) sum_x2 += x[i] * x[i];
  const float av_x = std::sqrt(sum_x2 / kQK_K);
  float scales[8], mins[8], w[32];
  uint8_t levels[kQK_K];
  for (int j = 0; j < 8; ++j) {
    // Weighting by magnitude (plus the block's RMS) protects the large values, which
    // carry most of a dot product.
    for (int l = 0; l < 32; ++l) w[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = search_scale_min(x + 32 * j, w, 32, 15, &mins[j], levels + 32 * j);
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
  q4k_pack_scales(ls, lm, b->scales);
  b->d = f32_to_f16(max_scale / 63.0f);
  b->dmin = f32_to_f16(max_min / 63.0f);
  const float d = f16_to_f32(b->d), dmin = f16_to_f32(b->dmin);
  for (int j = 0; j < 8; ++j) {
    const float ds = d * static_cast<float>(ls[j]), dm = dmin * static_cast<float>(lm[j]);
    for (int l = 0; l < 32; ++l) {
      const int q = ds == 0.0f ? 0 : nearest_int((x[32 * j + l] + dm) / ds);
      levels[32 * j + l] = static_cast<uint8_t>(std::clamp(q, 0, 15));
    }
  }
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) b->qs[32 * c + l] = static_cast<uint8_t>(levels[64 * c + l] | (levels[64 * c + 32 + l] << 4));
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

void quantize_row_q4_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) quantize_q4_k_block(src + i * kQK_K, b + i);
}

void quantize_row_q6_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t i = 0; i < n / kQK_K; ++i) quantize_q6_k_block(src + i * kQK_K, b + i);
}

void quantize_row_q8_k(const float* src, void* dst, int64_t n) {
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
