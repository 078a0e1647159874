#include "sparse_gemv.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/block_formats.h"
#include "quant/half.h"

namespace llms::bench {

SparseQ8Matrix sparse_from_q8_0(const uint8_t* q8_0, int64_t rows, int64_t cols) {
  SparseQ8Matrix m;
  m.rows = rows, m.cols = cols;
  const int64_t nb = cols / 32;
  m.words = (nb + 63) / 64;
  m.bitmap.assign(static_cast<size_t>(rows * m.words), 0);
  m.row_start.push_back(0);
  const auto* blocks = reinterpret_cast<const BlockQ8_0*>(q8_0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ8_0& blk = blocks[r * nb + b];
      if (std::all_of(blk.qs, blk.qs + 32, [](int8_t v) { return v == 0; })) continue;
      m.bitmap[static_cast<size_t>(r * m.words + b / 64)] |= uint64_t{1} << (b % 64);
      m.d.push_back(blk.d);
      m.qs.insert(m.qs.end(), blk.qs, blk.qs + 32);
    }
    m.row_start.push_back(static_cast<uint32_t>(m.d.size()));
  }
  return m;
}

void quantize_activations(const float* x, int64_t cols, Q8Activations& out) {
  out.d.resize(static_cast<size_t>(cols / 32));
  out.q.resize(static_cast<size_t>(cols));
  for (int64_t b = 0; b < cols / 32; ++b) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
    const float d = amax / 127.0f, id = d != 0 ? 1.0f / d : 0.0f;
    out.d[b] = d;
    for (int i = 0; i < 32; ++i) out.q[b * 32 + i] = static_cast<int8_t>(std::lround(x[b * 32 + i] * id));
  }
}

void sparse_gemv_reference(const SparseQ8Matrix& w, const Q8Activations& x, float* y) {
  for (int64_t r = 0; r < w.rows; ++r) {
    int64_t k = w.row_start[r];
    float acc = 0;
    for (int64_t word = 0; word < w.words; ++word) {
      for (uint64_t bits = w.bitmap[r * w.words + word]; bits != 0; bits &= bits - 1) {
        const int64_t b = word * 64 + __builtin_ctzll(bits);
        int32_t isum = 0;
        for (int i = 0; i < 32; ++i) isum += int32_t{w.qs[k * 32 + i]} * x.q[b * 32 + i];
        acc += static_cast<float>(isum) * (f16_to_f32(w.d[k]) * x.d[b]);
        ++k;
      }
    }
    y[r] = acc;
  }
}

bool sparse_gemv_avx2_available() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

namespace {

__attribute__((target("avx2,fma,f16c"))) inline __m256 block_dot(const int8_t* wq, const int8_t* xq) {
  const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wq));
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq));
  // |w| * sign(w) x as unsigned x signed bytes: pairs summed to int16, then to int32.
  const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(v, w));
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

}  // namespace

__attribute__((target("avx2,fma,f16c"))) void sparse_gemv_avx2(const SparseQ8Matrix& w, const Q8Activations& x,
                                                               float* y) {
  const int8_t* qs = w.qs.data();
  const uint16_t* d = w.d.data();
  for (int64_t r = 0; r < w.rows; ++r) {
    int64_t k = w.row_start[r];
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    bool odd = false;
    for (int64_t word = 0; word < w.words; ++word) {
      for (uint64_t bits = w.bitmap[r * w.words + word]; bits != 0; bits &= bits - 1) {
        const int64_t b = word * 64 + __builtin_ctzll(bits);
        const __m256 s = _mm256_set1_ps(_cvtsh_ss(d[k]) * x.d[b]);
        __m256& acc = odd ? acc1 : acc0;
        acc = _mm256_fmadd_ps(block_dot(qs + k * 32, x.q.data() + b * 32), s, acc);
        odd = !odd;
        ++k;
      }
    }
    const __m256 sum = _mm256_add_ps(acc0, acc1);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps(sum, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    y[r] = _mm_cvtss_f32(h);
  }
}

}  // namespace llms::bench
