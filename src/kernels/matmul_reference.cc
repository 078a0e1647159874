// matmul_reference(): the arithmetic of matmul.h written plainly over GGUF blocks,
// independent of the panel layout, the tile loops and the vector operations.
#include <cmath>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "kernels/matmul.h"
#include "quant/block_formats.h"
#include "quant/half.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

float round_f16(float v) { return f16_to_f32(f32_to_f16(v)); }

// One token's activations quantized in blocks of `block`, as GGML's Q8_0/Q8_1 (32)
// and Q8_K (256) blocks: q = round-to-even(x * (127 / max|x|)); blocks of 32 keep
// d = max|x| / 127 and s = d * sum(q) rounded to F16, blocks of 256 d = 1 / (127 / max|x|).
struct RefQ {
  std::vector<int> q;
  std::vector<float> d, s;
};

RefQ quantize_ref(const float* x, int64_t cols, int64_t block) {
  RefQ r;
  r.q.resize(static_cast<size_t>(cols));
  for (int64_t b = 0; b < cols / block; ++b) {
    float amax = 0.0f;
    for (int64_t i = 0; i < block; ++i) amax = std::fmax(amax, std::fabs(x[b * block + i]));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int64_t i = 0; i < block; ++i) {
      r.q[b * block + i] = static_cast<int>(std::nearbyint(x[b * block + i] * id));
      sum += r.q[b * block + i];
    }
    if (block == kQK) {
      r.d.push_back(round_f16(amax / 127.0f));
      r.s.push_back(round_f16(amax / 127.0f * static_cast<float>(sum)));
    } else {
      r.d.push_back(amax != 0.0f ? 1.0f / id : 0.0f);
    }
  }
  return r;
}

// F16 weights take activations rounded to F16 (GGML's F16 products), the others F32.
float dot_float(DType type, const uint8_t* row, const float* x, int64_t cols, std::vector<float>& tmp) {
  dequantize_row(type, row, tmp.data(), cols);
  float acc = 0.0f;
  for (int64_t c = 0; c < cols; ++c) acc = std::fma(tmp[c], type == DType::kF16 ? round_f16(x[c]) : x[c], acc);
  return acc;
}

// Blocks of 32 with one scale d: sum of level(b, j) * x over the block, times d * dx.
template <typename Block, typename Level>
float dot_blocks32(const uint8_t* row, const RefQ& x, int64_t cols, Level level) {
  const auto* b = reinterpret_cast<const Block*>(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < cols / kQK; ++i) {
    int isum = 0;
    for (int j = 0; j < kQK; ++j) isum += level(b[i], j) * x.q[i * kQK + j];
    acc = std::fma(static_cast<float>(isum), f16_to_f32(b[i].d) * x.d[i], acc);
  }
  return acc;
}

// Element j of a block of 32 stored as nibbles: the low ones hold 0..15, the high ones 16..31.
template <typename Block>
int nibble(const Block& b, int j) {
  return j < 16 ? (b.qs[j] & 0xF) : (b.qs[j - 16] >> 4);
}

// Level 0..31 of element j of a Q5_0/Q5_1 block.
template <typename Block>
int q5_level(const Block& b, int j) {
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  return nibble(b, j) | static_cast<int>(((qh >> j) & 1) << 4);
}

float dot_q5_1(const uint8_t* row, const RefQ& x, int64_t cols) {
  const auto* b = reinterpret_cast<const BlockQ5_1*>(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < cols / kQK; ++i) {
    int isum = 0;
    for (int j = 0; j < kQK; ++j) isum += q5_level(b[i], j) * x.q[i * kQK + j];
    acc = std::fma(static_cast<float>(isum), f16_to_f32(b[i].d) * x.d[i], acc);
    acc = std::fma(x.s[i], f16_to_f32(b[i].m), acc);
  }
  return acc;
}

// Super-blocks of 256 in sub-blocks of `sub` elements, each with an integer scale:
// sum over sub-blocks of scale(b, j) * sum of level(b, e) * x, times d * dx.
template <typename Block, typename Level, typename Scale>
float dot_super(const uint8_t* row, const RefQ& x, int64_t cols, int sub, Level level, Scale scale) {
  const auto* b = reinterpret_cast<const Block*>(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < cols / kQK_K; ++i) {
    const int* xq = x.q.data() + i * kQK_K;
    int isum = 0;
    for (int j = 0; j < kQK_K / sub; ++j) {
      int dot = 0;
      for (int l = 0; l < sub; ++l) dot += level(b[i], sub * j + l) * xq[sub * j + l];
      isum += scale(b[i], j) * dot;
    }
    acc = std::fma(static_cast<float>(isum), f16_to_f32(b[i].d) * x.d[i], acc);
  }
  return acc;
}

// Q4_K and Q5_K: eight sub-blocks of 32, each with a 6-bit scale and min:
// d * dx * sum(sc * q . x) - dmin * dx * sum(m * sum x).
template <typename Block, typename Level>
float dot_scale_min(const uint8_t* row, const RefQ& x, int64_t cols, Level level) {
  const auto* b = reinterpret_cast<const Block*>(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < cols / kQK_K; ++i) {
    const int* xq = x.q.data() + i * kQK_K;
    int isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      q4k_scale_min(b[i].scales, j, &sc, &m);
      int dot = 0, xsum = 0;
      for (int l = 0; l < 32; ++l) {
        dot += level(b[i], j, l) * xq[32 * j + l];
        xsum += xq[32 * j + l];
      }
      isum += sc * dot;
      msum += m * xsum;
    }
    const float dx = x.d[i];
    acc = std::fma(static_cast<float>(isum), f16_to_f32(b[i].d) * dx, acc);
    acc = std::fma(-static_cast<float>(msum), f16_to_f32(b[i].dmin) * dx, acc);
  }
  return acc;
}

// Low four bits of element l of sub-block j of a Q4_K/Q5_K super-block.
template <typename Block>
int k_nibble(const Block& b, int j, int l) {
  return (b.qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF;
}

// Scale s_j - 32 of sub-block j of a Q3_K super-block (the rule in block_formats.h).
int q3k_scale(const uint8_t* s, int j) {
  const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

float dot_quantized(DType type, const uint8_t* row, const RefQ& xq, int64_t cols) {
  switch (type) {
    case DType::kQ8_0:
      return dot_blocks32<BlockQ8_0>(row, xq, cols, [](const BlockQ8_0& b, int j) { return int{b.qs[j]}; });
    case DType::kQ4_0:
      return dot_blocks32<BlockQ4_0>(row, xq, cols, [](const BlockQ4_0& b, int j) { return nibble(b, j) - 8; });
    case DType::kQ5_0:
      return dot_blocks32<BlockQ5_0>(row, xq, cols, [](const BlockQ5_0& b, int j) { return q5_level(b, j) - 16; });
    case DType::kIQ4_NL:
      return dot_blocks32<BlockIQ4_NL>(row, xq, cols,
                                       [](const BlockIQ4_NL& b, int j) { return int{kIq4Values[nibble(b, j)]}; });
    case DType::kQ5_1: return dot_q5_1(row, xq, cols);
    case DType::kQ4_K:
      return dot_scale_min<BlockQ4_K>(row, xq, cols, [](const BlockQ4_K& b, int j, int l) { return k_nibble(b, j, l); });
    case DType::kQ5_K:
      return dot_scale_min<BlockQ5_K>(row, xq, cols, [](const BlockQ5_K& b, int j, int l) {
        return k_nibble(b, j, l) | (((b.qh[l] >> j) & 1) << 4);
      });
    case DType::kQ6_K:
      return dot_super<BlockQ6_K>(
          row, xq, cols, 16,
          [](const BlockQ6_K& b, int e) {
            const int h = e / 128, k = (e % 128) / 32, p = e % 32;
            const uint8_t ql = b.ql[64 * h + 32 * (k & 1) + p];
            return ((k < 2 ? ql & 0xF : ql >> 4) | (((b.qh[32 * h + p] >> (2 * k)) & 3) << 4)) - 32;
          },
          [](const BlockQ6_K& b, int j) { return int{b.scales[j]}; });
    case DType::kQ3_K:
      return dot_super<BlockQ3_K>(
          row, xq, cols, 16,
          [](const BlockQ3_K& b, int e) {
            const int h = e / 128, k = (e % 128) / 32, p = e % 32;
            const int low = (b.qs[32 * h + p] >> (2 * k)) & 3;
            const int high = (b.hmask[p] >> (4 * h + k)) & 1;
            return low + 4 * high - 4;
          },
          [](const BlockQ3_K& b, int j) { return q3k_scale(b.scales, j); });
    case DType::kIQ4_XS:
      return dot_super<BlockIQ4_XS>(
          row, xq, cols, 32,
          [](const BlockIQ4_XS& b, int e) {
            const int j = e / 32, l = e % 32;
            const uint8_t q = b.qs[16 * j + l % 16];
            return int{kIq4Values[l < 16 ? q & 0xF : q >> 4]};
          },
          [](const BlockIQ4_XS& b, int j) { return iq4xs_scale(b, j); });
    default: LLMS_CHECK(false, "no reference dot product for this type"); return 0.0f;
  }
}

// Activations in super-blocks of 256 for these types, blocks of 32 for the others.
bool k_block_type(DType type) {
  return type == DType::kQ4_K || type == DType::kQ6_K || type == DType::kQ5_K || type == DType::kQ3_K ||
         type == DType::kIQ4_XS;
}

}  // namespace

void matmul_reference(const WeightMatrix& w, const float* x, int64_t n, float* y) {
  const int64_t rows = w.rows(), cols = w.cols();
  // Types converted at load are converted here the same way.
  DType type = w.dtype();
  std::vector<uint8_t> converted;
  std::vector<float> tmp(static_cast<size_t>(cols));
  int64_t row_bytes = w.row_bytes();
  const uint8_t* data = w.row(0);
  if (type != w.kernel_dtype()) {
    row_bytes = dtype_row_bytes(DType::kQ8_0, cols);
    converted.resize(static_cast<size_t>(row_bytes * rows));
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_row(type, w.row(r), tmp.data(), cols);
      quantize_row(DType::kQ8_0, tmp.data(), converted.data() + r * row_bytes, cols);
    }
    type = DType::kQ8_0;
    data = converted.data();
  }
  const bool is_float = type == DType::kF32 || type == DType::kF16 || type == DType::kBF16;
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * cols;
    const int64_t block = k_block_type(type) ? kQK_K : kQK;
    const RefQ xq = is_float ? RefQ{} : quantize_ref(xt, cols, block);
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* row = data + r * row_bytes;
      const float v = is_float ? dot_float(type, row, xt, cols, tmp) : dot_quantized(type, row, xq, cols);
      y[t * rows + r] = v;
    }
  }
}

}  // namespace llms
