// Decoding of the k-quant super-blocks (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K).
// Layouts and rules: block_formats.h.
#include "quant/block_formats.h"
#include "quant/half.h"
#include "quant/quant_traits.h"

namespace llms {
namespace {

// The 16 six-bit scales of a Q3_K super-block, each minus 32.
void q3k_scales(const uint8_t* s, int* out) {
  for (int j = 0; j < 16; ++j) {
    int v;
    if (j < 4) {
      v = (s[j] & 0xF) | ((s[j + 8] & 3) << 4);
    } else if (j < 8) {
      v = (s[j] & 0xF) | (((s[j + 4] >> 2) & 3) << 4);
    } else if (j < 12) {
      v = (s[j - 8] >> 4) | (((s[j] >> 4) & 3) << 4);
    } else {
      v = (s[j - 8] >> 4) | (((s[j - 4] >> 6) & 3) << 4);
    }
    out[j] = v - 32;
  }
}

}  // namespace

void dequantize_row_q2_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, dst += kQK_K) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const int q = (b[i].qs[32 * h + l] >> (2 * k)) & 3;
      const uint8_t sc = b[i].scales[e / 16];
      dst[e] = d * static_cast<float>(sc & 0xF) * static_cast<float>(q) - dmin * static_cast<float>(sc >> 4);
    }
  }
}

void dequantize_row_q3_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ3_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, dst += kQK_K) {
    const float d = f16_to_f32(b[i].d);
    int scales[16];
    q3k_scales(b[i].scales, scales);
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const int low = (b[i].qs[32 * h + l] >> (2 * k)) & 3;
      const bool high = (b[i].hmask[l] >> (4 * h + k)) & 1;
      const int q = low - (high ? 0 : 4);
      dst[e] = d * static_cast<float>(scales[e / 16]) * static_cast<float>(q);
    }
  }
}

// Q4_K and Q5_K share their super-block: 8 sub-blocks of 32 with a 6-bit scale and
// min each, low nibbles in qs; `high(i, j, l)` gives value l of sub-block j's fifth bit
// (0 for Q4_K).
template <typename Block, typename HighBit>
void dequantize_row_k_nibbles(const void* src, float* dst, int64_t n, HighBit high) {
  const auto* b = static_cast<const Block*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, dst += kQK_K) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      q4k_scale_min(b[i].scales, j, &sc, &m);
      const float scale = d * static_cast<float>(sc), min = dmin * static_cast<float>(m);
      const uint8_t* q = b[i].qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int l = 0; l < 32; ++l) {
        const int v = ((q[l] >> shift) & 0xF) | (high(b[i], j, l) << 4);
        dst[32 * j + l] = scale * static_cast<float>(v) - min;
      }
    }
  }
}

void dequantize_row_q4_k(const void* src, float* dst, int64_t n) {
  dequantize_row_k_nibbles<BlockQ4_K>(src, dst, n, [](const BlockQ4_K&, int, int) { return 0; });
}

void dequantize_row_q5_k(const void* src, float* dst, int64_t n) {
  dequantize_row_k_nibbles<BlockQ5_K>(src, dst, n, [](const BlockQ5_K& blk, int j, int l) { return (blk.qh[l] >> j) & 1; });
}

void dequantize_row_q6_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, dst += kQK_K) {
    const float d = f16_to_f32(b[i].d);
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const uint8_t ql = b[i].ql[64 * h + 32 * (k & 1) + l];
      const int low = k < 2 ? (ql & 0xF) : (ql >> 4);
      const int high = (b[i].qh[32 * h + l] >> (2 * k)) & 3;
      const int q = (low | (high << 4)) - 32;
      dst[e] = d * static_cast<float>(b[i].scales[e / 16]) * static_cast<float>(q);
    }
  }
}

void dequantize_row_q8_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t i = 0; i < n / kQK_K; ++i, dst += kQK_K) {
    for (int e = 0; e < kQK_K; ++e) dst[e] = b[i].d * static_cast<float>(b[i].qs[e]);
  }
}

}  // namespace llms
