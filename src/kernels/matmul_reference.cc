// matmul_reference(): the arithmetic of matmul.h written plainly over GGUF blocks,
// independent of the panel layout, the tile loops and the vector operations.
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/matmul.h"
#include "quant/block_formats.h"
#include "quant/half.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

// One token's activations quantized in blocks of `block`: d = max|x| / 127,
// q = round-to-even(x * (1 / d)).
struct RefQ {
  std::vector<int> q;
  std::vector<float> d;
};

RefQ quantize_ref(const float* x, int64_t cols, int64_t block) {
  RefQ r;
  r.q.resize(static_cast<size_t>(cols));
  for (int64_t b = 0; b < cols / block; ++b) {
    float amax = 0.0f;
    for (int64_t i = 0; i < block; ++i) amax = std::fmax(amax, std::fabs(x[b * block + i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int64_t i = 0; i < block; ++i) r.q[b * block + i] = static_cast<int>(std::nearbyint(x[b * block + i] * id));
    r.d.push_back(d);
  }
  return r;
}

float dot_float(DType type, const uint8_t* row, const float* x, int64_t cols, std::vector<float>& tmp) {
  dequantize_row(type, row, tmp.data(), cols);
  float acc = 0.0f;
  for (int64_t c = 0; c < cols; ++c) acc = std::fma(tmp[c], x[c], acc);
  return acc;
}

float dot_q8_0(const uint8_t* row, const RefQ& x, int64_t cols) {
  const auto* b = reinterpret_cast<const BlockQ8_0*>(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < cols / kQK; ++i) {
    int isum = 0;
    for (int j = 0; j < kQK; ++j) isum += b[i].qs[j] * x.q[i * kQK + j];
    acc = std::fma(static_cast<float>(isum), f16_to_f32(b[i].d) * x.d[i], acc);
  }
  return acc;
}

float dot_q4_0(const uint8_t* row, const RefQ& x, int64_t cols) {
  const auto* b = reinterpret_cast<const BlockQ4_0*>(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < cols / kQK; ++i) {
    int isum = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      isum += ((b[i].qs[j] & 0xF) - 8) * x.q[i * kQK + j];
      isum += ((b[i].qs[j] >> 4) - 8) * x.q[i * kQK + j + 16];
    }
    acc = std::fma(static_cast<float>(isum), f16_to_f32(b[i].d) * x.d[i], acc);
  }
  return acc;
}

float dot_q4_k(const uint8_t* row, const RefQ& x, int64_t cols) {
  const auto* b = reinterpret_cast<const BlockQ4_K*>(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < cols / kQK_K; ++i) {
    const int* xq = x.q.data() + i * kQK_K;
    int isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      q4k_scale_min(b[i].scales, j, &sc, &m);
      int dot = 0, xsum = 0;
      for (int l = 0; l < 32; ++l) {
        const int q = (b[i].qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF;
        dot += q * xq[32 * j + l];
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

float dot_q6_k(const uint8_t* row, const RefQ& x, int64_t cols) {
  const auto* b = reinterpret_cast<const BlockQ6_K*>(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < cols / kQK_K; ++i) {
    const int* xq = x.q.data() + i * kQK_K;
    int isum = 0;
    for (int j = 0; j < 16; ++j) {
      int dot = 0;
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * j + l, h = e / 128, k = (e % 128) / 32, p = e % 32;
        const uint8_t ql = b[i].ql[64 * h + 32 * (k & 1) + p];
        const int q = ((k < 2 ? ql & 0xF : ql >> 4) | (((b[i].qh[32 * h + p] >> (2 * k)) & 3) << 4)) - 32;
        dot += q * xq[e];
      }
      isum += b[i].scales[j] * dot;
    }
    acc = std::fma(static_cast<float>(isum), f16_to_f32(b[i].d) * x.d[i], acc);
  }
  return acc;
}

// Level 0..31 of element j of a Q5_0/Q5_1 block.
template <typename Block>
int q5_level(const Block& b, int j) {
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  const int low = j < 16 ? (b.qs[j] & 0xF) : (b.qs[j - 16] >> 4);
  return low | static_cast<int>(((qh >> j) & 1) << 4);
}

float dot_q5_0(const uint8_t* row, const RefQ& x, int64_t cols) {
  const auto* b = reinterpret_cast<const BlockQ5_0*>(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < cols / kQK; ++i) {
    int isum = 0;
    for (int j = 0; j < kQK; ++j) isum += (q5_level(b[i], j) - 16) * x.q[i * kQK + j];
    acc = std::fma(static_cast<float>(isum), f16_to_f32(b[i].d) * x.d[i], acc);
  }
  return acc;
}

float dot_q5_1(const uint8_t* row, const RefQ& x, int64_t cols) {
  const auto* b = reinterpret_cast<const BlockQ5_1*>(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < cols / kQK; ++i) {
    int isum = 0, xsum = 0;
    for (int j = 0; j < kQK; ++j) {
      isum += q5_level(b[i], j) * x.q[i * kQK + j];
      xsum += x.q[i * kQK + j];
    }
    acc = std::fma(static_cast<float>(isum), f16_to_f32(b[i].d) * x.d[i], acc);
    acc = std::fma(static_cast<float>(xsum), f16_to_f32(b[i].m) * x.d[i], acc);
  }
  return acc;
}

float dot_iq4_nl(const uint8_t* row, const RefQ& x, int64_t cols) {
  const auto* b = reinterpret_cast<const BlockIQ4_NL*>(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < cols / kQK; ++i) {
    int isum = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      isum += kIq4Values[b[i].qs[j] & 0xF] * x.q[i * kQK + j];
      isum += kIq4Values[b[i].qs[j] >> 4] * x.q[i * kQK + j + 16];
    }
    acc = std::fma(static_cast<float>(isum), f16_to_f32(b[i].d) * x.d[i], acc);
  }
  return acc;
}

float dot_q5_k(const uint8_t* row, const RefQ& x, int64_t cols) {
  const auto* b = reinterpret_cast<const BlockQ5_K*>(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < cols / kQK_K; ++i) {
    const int* xq = x.q.data() + i * kQK_K;
    int isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      q4k_scale_min(b[i].scales, j, &sc, &m);
      int dot = 0, xsum = 0;
      for (int l = 0; l < 32; ++l) {
        const int q = ((b[i].qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF) | (((b[i].qh[l] >> j) & 1) << 4);
        dot += q * xq[32 * j + l];
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

float dot_iq4_xs(const uint8_t* row, const RefQ& x, int64_t cols) {
  const auto* b = reinterpret_cast<const BlockIQ4_XS*>(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < cols / kQK_K; ++i) {
    const int* xq = x.q.data() + i * kQK_K;
    int isum = 0;
    for (int j = 0; j < 8; ++j) {
      int dot = 0;
      for (int l = 0; l < 16; ++l) {
        dot += kIq4Values[b[i].qs[16 * j + l] & 0xF] * xq[32 * j + l];
        dot += kIq4Values[b[i].qs[16 * j + l] >> 4] * xq[32 * j + 16 + l];
      }
      isum += iq4xs_scale(b[i], j) * dot;
    }
    acc = std::fma(static_cast<float>(isum), f16_to_f32(b[i].d) * x.d[i], acc);
  }
  return acc;
}

// Scale s_j - 32 of sub-block j of a Q3_K super-block (the rule in block_formats.h).
int q3k_scale(const uint8_t* s, int j) {
  const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

float dot_q3_k(const uint8_t* row, const RefQ& x, int64_t cols) {
  const auto* b = reinterpret_cast<const BlockQ3_K*>(row);
  float acc = 0.0f;
  for (int64_t i = 0; i < cols / kQK_K; ++i) {
    const int* xq = x.q.data() + i * kQK_K;
    int isum = 0;
    for (int j = 0; j < 16; ++j) {
      int dot = 0;
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * j + l, h = e / 128, k = (e % 128) / 32, p = e % 32;
        const int low = (b[i].qs[32 * h + p] >> (2 * k)) & 3;
        const int high = (b[i].hmask[p] >> (4 * h + k)) & 1;
        dot += (low + 4 * high - 4) * xq[e];
      }
      isum += q3k_scale(b[i].scales, j) * dot;
    }
    acc = std::fma(static_cast<float>(isum), f16_to_f32(b[i].d) * x.d[i], acc);
  }
  return acc;
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
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = x + t * cols;
    const int64_t block = k_block_type(type) ? kQK_K : kQK;
    const RefQ xq = (type == DType::kF32 || type == DType::kF16 || type == DType::kBF16) ? RefQ{}
                                                                                         : quantize_ref(xt, cols, block);
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* row = data + r * row_bytes;
      float v;
      switch (type) {
        case DType::kQ8_0: v = dot_q8_0(row, xq, cols); break;
        case DType::kQ4_0: v = dot_q4_0(row, xq, cols); break;
        case DType::kQ4_K: v = dot_q4_k(row, xq, cols); break;
        case DType::kQ6_K: v = dot_q6_k(row, xq, cols); break;
        case DType::kQ5_0: v = dot_q5_0(row, xq, cols); break;
        case DType::kQ5_1: v = dot_q5_1(row, xq, cols); break;
        case DType::kIQ4_NL: v = dot_iq4_nl(row, xq, cols); break;
        case DType::kQ5_K: v = dot_q5_k(row, xq, cols); break;
        case DType::kIQ4_XS: v = dot_iq4_xs(row, xq, cols); break;
        case DType::kQ3_K: v = dot_q3_k(row, xq, cols); break;
        default: v = dot_float(type, row, xt, cols, tmp); break;
      }
      y[t * rows + r] = v;
    }
  }
}

}  // namespace llms
