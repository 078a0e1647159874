#include "kernels/attention.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/simd_target.h"
#include "quant/row_convert.h"

namespace llms {

void kv_store(const KvLayerView& kv, const int32_t* block_table, int64_t pos, const float* k, const float* v) {
  const int32_t block = block_table[pos / kv.block_size];
  const int row = static_cast<int>(pos % kv.block_size);
  quantize_row(kv.k_type, k, kv.k_row(block, row), kv.row_elems());
  quantize_row(kv.v_type, v, kv.v_row(block, row), kv.row_elems());
}

namespace {

// ---------------------------------------------------------------------------------
// The block primitives of the tile loop, per SIMD target:
//   block_scores_t:   out[j] = dot(q, k_j) * scale   over a transposed block (below)
//   softmax_step:     the online softmax's max and exponentials (the kernel table's)
//   block_accumulate: acc = acc * c + sum_j p[j] * v_j   (rows in order; rows of one KV
//                     head are `stride` floats apart, decoded rows and F32 cache alike)

void block_accumulate_scalar(float* acc, float c, const float* p, const float* v, int64_t stride, int rows, int hd) {
  for (int d = 0; d < hd; ++d) acc[d] *= c;
  for (int j = 0; j < rows; ++j, v += stride)
    for (int d = 0; d < hd; ++d) acc[d] += p[j] * v[d];
}

__attribute__((target("avx2,fma"))) void block_accumulate_avx2(float* acc, float c, const float* p, const float* v,
                                                               int64_t stride, int rows, int hd) {
  const __m256 vc = _mm256_set1_ps(c);
  int d = 0;
  for (; d + 8 <= hd; d += 8) {
    __m256 a = _mm256_mul_ps(_mm256_loadu_ps(acc + d), vc);
    const float* vr = v + d;
    for (int j = 0; j < rows; ++j, vr += stride) a = _mm256_fmadd_ps(_mm256_set1_ps(p[j]), _mm256_loadu_ps(vr), a);
    _mm256_storeu_ps(acc + d, a);
  }
  for (; d < hd; ++d) {
    float a = acc[d] * c;
    for (int j = 0; j < rows; ++j) a += p[j] * v[j * stride + d];
    acc[d] = a;
  }
}

__attribute__((target("avx512f"))) void block_accumulate_avx512(float* acc, float c, const float* p, const float* v,
                                                                 int64_t stride, int rows, int hd) {
  const __m512 vc = _mm512_set1_ps(c);
  // Four vectors of the row (64 dimensions) at a time: four independent chains over
  // the rows instead of one. Each lane still sees the same operations in order.
  for (int d0 = 0; d0 < hd; d0 += 64) {
    __mmask16 m[4];
    __m512 a[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
      const int d = d0 + 16 * u;
      const int left = hd - d;
      m[u] = left >= 16 ? static_cast<__mmask16>(0xFFFF)
                        : left > 0 ? static_cast<__mmask16>((1u << left) - 1) : static_cast<__mmask16>(0);
      a[u] = _mm512_mul_ps(_mm512_maskz_loadu_ps(m[u], acc + d), vc);
    }
    const float* vr = v + d0;
    for (int j = 0; j < rows; ++j, vr += stride) {
      const __m512 pj = _mm512_set1_ps(p[j]);
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) a[u] = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(m[u], vr + 16 * u), a[u]);
    }
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) _mm512_mask_storeu_ps(acc + d0 + 16 * u, m[u], a[u]);
  }
}

// Scores against a transposed block: kt[d * B + j] is dimension d of key j, so one
// vector holds the scores of 16 (8) keys and no horizontal sums are needed. Four
// partial sums over d (d mod 4) keep four multiply-add chains in flight. out[0, B)
// for any block size B.
void block_scores_t_scalar(const float* q, const float* kt, int B, int hd, float scale, float* out) {
  for (int j = 0; j < B; ++j) {
    float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int d = 0; d < hd; ++d) part[d % 4] += q[d] * kt[d * B + j];
    out[j] = ((part[0] + part[1]) + (part[2] + part[3])) * scale;
  }
}
__attribute__((target("avx2,fma"))) void block_scores_t_avx2(const float* q, const float* kt, int B, int hd,
                                                             float scale, float* out) {
  int j = 0;
  for (; j + 8 <= B; j += 8) {
    __m256 p0 = _mm256_setzero_ps(), p1 = p0, p2 = p0, p3 = p0;
    const float* k = kt + j;
    int d = 0;
    for (; d + 4 <= hd; d += 4, k += 4 * B) {
      p0 = _mm256_fmadd_ps(_mm256_set1_ps(q[d]), _mm256_loadu_ps(k), p0);
      p1 = _mm256_fmadd_ps(_mm256_set1_ps(q[d + 1]), _mm256_loadu_ps(k + B), p1);
      p2 = _mm256_fmadd_ps(_mm256_set1_ps(q[d + 2]), _mm256_loadu_ps(k + 2 * B), p2);
      p3 = _mm256_fmadd_ps(_mm256_set1_ps(q[d + 3]), _mm256_loadu_ps(k + 3 * B), p3);
    }
    if (d < hd) p0 = _mm256_fmadd_ps(_mm256_set1_ps(q[d]), _mm256_loadu_ps(k), p0);
    if (d + 1 < hd) p1 = _mm256_fmadd_ps(_mm256_set1_ps(q[d + 1]), _mm256_loadu_ps(k + B), p1);
    if (d + 2 < hd) p2 = _mm256_fmadd_ps(_mm256_set1_ps(q[d + 2]), _mm256_loadu_ps(k + 2 * B), p2);
    const __m256 sum = _mm256_add_ps(_mm256_add_ps(p0, p1), _mm256_add_ps(p2, p3));
    _mm256_storeu_ps(out + j, _mm256_mul_ps(sum, _mm256_set1_ps(scale)));
  }
  for (; j < B; ++j) {
    float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int d = 0; d < hd; ++d) part[d % 4] = std::fma(q[d], kt[d * B + j], part[d % 4]);
    out[j] = ((part[0] + part[1]) + (part[2] + part[3])) * scale;
  }
}
__attribute__((target("avx512f"))) void block_scores_t_avx512(const float* q, const float* kt, int B, int hd,
                                                               float scale, float* out) {
  for (int j = 0; j < B; j += 16) {
    const __mmask16 m = B - j >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (B - j)) - 1);
    __m512 p0 = _mm512_setzero_ps(), p1 = p0, p2 = p0, p3 = p0;
    const float* k = kt + j;
    int d = 0;
    for (; d + 4 <= hd; d += 4, k += 4 * B) {
      p0 = _mm512_fmadd_ps(_mm512_set1_ps(q[d]), _mm512_maskz_loadu_ps(m, k), p0);
      p1 = _mm512_fmadd_ps(_mm512_set1_ps(q[d + 1]), _mm512_maskz_loadu_ps(m, k + B), p1);
      p2 = _mm512_fmadd_ps(_mm512_set1_ps(q[d + 2]), _mm512_maskz_loadu_ps(m, k + 2 * B), p2);
      p3 = _mm512_fmadd_ps(_mm512_set1_ps(q[d + 3]), _mm512_maskz_loadu_ps(m, k + 3 * B), p3);
    }
    if (d < hd) p0 = _mm512_fmadd_ps(_mm512_set1_ps(q[d]), _mm512_maskz_loadu_ps(m, k), p0);
    if (d + 1 < hd) p1 = _mm512_fmadd_ps(_mm512_set1_ps(q[d + 1]), _mm512_maskz_loadu_ps(m, k + B), p1);
    if (d + 2 < hd) p2 = _mm512_fmadd_ps(_mm512_set1_ps(q[d + 2]), _mm512_maskz_loadu_ps(m, k + 2 * B), p2);
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(p0, p1), _mm512_add_ps(p2, p3));
    _mm512_mask_storeu_ps(out + j, m, _mm512_mul_ps(sum, _mm512_set1_ps(scale)));
  }
}

// GCC 12 warns about the undefined source register inside _mm512_cvtph_ps.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// F16 rows decoded with the target's conversion instruction; exact, as the scalar
// decoding (every half is a float), so the results do not depend on the target.
__attribute__((target("avx512f"))) void f16_row_avx512(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  if (i < n) dequantize_row(DType::kF16, src + i, dst + i, n - i);
}
__attribute__((target("avx2,f16c"))) void f16_row_avx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  if (i < n) dequantize_row(DType::kF16, src + i, dst + i, n - i);
}
void f16_row_scalar(const uint16_t* src, float* dst, int64_t n) { dequantize_row(DType::kF16, src, dst, n); }
#pragma GCC diagnostic pop

using F16RowFn = void (*)(const uint16_t*, float*, int64_t);

struct BlockOps {
  void (*accumulate)(float* acc, float c, const float* p, const float* v, int64_t stride, int rows, int hd);
  F16RowFn f16_row;  // F16 cache rows to floats
  void (*scores_t)(const float* q, const float* kt, int B, int hd, float scale, float* out);
  float (*softmax_step)(float* x, int64_t n, float m_old, float* m_new);  // the kernel table's
};

BlockOps ops_for(SimdTarget t) {
  switch (t) {
    case SimdTarget::kAvx512: return {block_accumulate_avx512, f16_row_avx512, block_scores_t_avx512, avx512_kernels().softmax_step};
    case SimdTarget::kAvx2: return {block_accumulate_avx2, f16_row_avx2, block_scores_t_avx2, avx2_kernels().softmax_step};
    default: return {block_accumulate_scalar, f16_row_scalar, block_scores_t_scalar, scalar_kernels().softmax_step};
  }
}

// ---------------------------------------------------------------------------------

// Rows of one KV block as floats, for one KV head: points into the cache for F32;
// else decodes the head's part of each row when the type's blocks do not straddle
// heads (F16, BF16, and 32-value blocks when head_dim is a multiple of 32), or whole
// rows when they do.
class BlockRows {
 public:
  BlockRows(const KvLayerView& kv, bool is_k, F16RowFn f16_row)
      : kv_(kv), is_k_(is_k), type_(is_k ? kv.k_type : kv.v_type), f16_row_(f16_row) {
    head_only_ = type_ != DType::kF32 && kv.head_dim % dtype_info(type_).block_size == 0;
    stride_ = head_only_ ? kv.head_dim : kv.row_elems();
    if (type_ != DType::kF32) buf_.resize(static_cast<size_t>(kv.block_size * stride_));
  }
  // Makes rows [0, n) of `block` available; row(r) then points at head `kvh`.
  void load(int32_t block, int n, int kvh) {
    block_ = block;
    kvh_ = kvh;
    if (type_ == DType::kF32) return;
    const int64_t elems = head_only_ ? kv_.head_dim : kv_.row_elems();
    const int64_t skip = head_only_ ? dtype_row_bytes(type_, static_cast<int64_t>(kvh) * kv_.head_dim) : 0;
    for (int r = 0; r < n; ++r) {
      const uint8_t* src = (is_k_ ? kv_.k_row(block, r) : kv_.v_row(block, r)) + skip;
      float* dst = buf_.data() + r * stride_;
      if (type_ == DType::kF16) {
        f16_row_(reinterpret_cast<const uint16_t*>(src), dst, elems);
      } else {
        dequantize_row(type_, src, dst, elems);
      }
    }
  }
  // Row 0 of the loaded block for the head; rows are stride() floats apart.
  const float* rows() const { return row(0); }
  int64_t stride() const { return stride_; }
  const float* row(int r) const {
    if (type_ == DType::kF32) {
      return reinterpret_cast<const float*>(is_k_ ? kv_.k_row(block_, r) : kv_.v_row(block_, r)) +
             static_cast<int64_t>(kvh_) * kv_.head_dim;
    }
    return buf_.data() + r * stride_ + (head_only_ ? 0 : static_cast<int64_t>(kvh_) * kv_.head_dim);
  }

 private:
  const KvLayerView& kv_;
  bool is_k_;
  DType type_;
  F16RowFn f16_row_;
  bool head_only_ = false;
  int64_t stride_ = 0;
  std::vector<float> buf_;
  int32_t block_ = 0;
  int kvh_ = 0;
};

// One task: KV head `kvh`, query tokens [i0, i1) of the chunk, all heads of the group.
void attend_tile(const AttentionQuery& q, const KvLayerView& kv, int n_heads, float scale, int kvh, int i0, int i1,
                 const BlockOps& ops) {
  const int hd = kv.head_dim, B = kv.block_size;
  const int group = n_heads / kv.n_kv_heads;
  const int n_rows = (i1 - i0) * group;  // (token, head) pairs of this tile
  std::vector<float> m(static_cast<size_t>(n_rows), -INFINITY), l(static_cast<size_t>(n_rows), 0.0f);
  std::vector<float> acc(static_cast<size_t>(n_rows) * hd, 0.0f), s(static_cast<size_t>(B));
  // The block's keys transposed ([hd][B]); rows past the block's last are zeros or
  // an earlier block's, and their scores are never used.
  std::vector<float> kt(static_cast<size_t>(hd) * B, 0.0f);
  BlockRows keys(kv, true, ops.f16_row), vals(kv, false, ops.f16_row);
  const int64_t last_pos = q.first_pos + i1 - 1;
  for (int64_t b = 0; b * B <= last_pos; ++b) {
    const int64_t base = b * B;
    const int rows = static_cast<int>(std::min<int64_t>(B, last_pos - base + 1));
    keys.load(q.block_table[b], rows, kvh);
    vals.load(q.block_table[b], rows, kvh);
    for (int j = 0; j < rows; ++j) {
      const float* k = keys.row(j);
      for (int d = 0; d < hd; ++d) kt[static_cast<size_t>(d) * B + j] = k[d];
    }
    for (int i = i0; i < i1; ++i) {
      const int64_t pos = q.first_pos + i;
      if (pos < base) continue;
      const int valid = static_cast<int>(std::min<int64_t>(rows, pos - base + 1));  // causal
      for (int g = 0; g < group; ++g) {
        const int h = kvh * group + g;
        const float* qv = q.q + (static_cast<int64_t>(i) * n_heads + h) * hd;
        const int r = (i - i0) * group + g;
        ops.scores_t(qv, kt.data(), B, hd, scale, s.data());
        float m_new;
        const float sum = ops.softmax_step(s.data(), valid, m[r], &m_new);
        const float c = std::exp(m[r] - m_new);  // 0 on the first block (m = -inf)
        ops.accumulate(acc.data() + static_cast<int64_t>(r) * hd, c, s.data(), vals.rows(), vals.stride(), valid, hd);
        l[r] = l[r] * c + sum;
        m[r] = m_new;
      }
    }
  }
  for (int i = i0; i < i1; ++i) {
    for (int g = 0; g < group; ++g) {
      const int h = kvh * group + g;
      const int r = (i - i0) * group + g;
      float* out = q.out + (static_cast<int64_t>(i) * n_heads + h) * hd;
      const float inv = 1.0f / l[r];
      const float* a = acc.data() + static_cast<int64_t>(r) * hd;
      for (int d = 0; d < hd; ++d) out[d] = a[d] * inv;
    }
  }
}

// ---------------------------------------------------------------------------------
// Scalar reference: plain two-pass softmax, one (token, head) at a time.

void attend_one(const AttentionQuery& query, const KvLayerView& kv, int n_heads, float scale, int i, int h,
                std::vector<float>& scores, std::vector<float>& row) {
  const int hd = kv.head_dim;
  const int group = n_heads / kv.n_kv_heads;
  const int kvh = h / group;
  const float* q = query.q + (static_cast<int64_t>(i) * n_heads + h) * hd;
  const int64_t n_ctx = query.first_pos + i + 1;
  float max = -INFINITY;
  for (int64_t p = 0; p < n_ctx; ++p) {
    const int32_t block = query.block_table[p / kv.block_size];
    dequantize_row(kv.k_type, kv.k_row(block, static_cast<int>(p % kv.block_size)), row.data(), kv.row_elems());
    const float* k = row.data() + static_cast<int64_t>(kvh) * hd;
    float s = 0.0f;
    for (int d = 0; d < hd; ++d) s += q[d] * k[d];
    scores[p] = s * scale;
    max = std::fmax(max, scores[p]);
  }
  float sum = 0.0f;
  for (int64_t p = 0; p < n_ctx; ++p) {
    scores[p] = std::exp(scores[p] - max);
    sum += scores[p];
  }
  float* out = query.out + (static_cast<int64_t>(i) * n_heads + h) * hd;
  for (int d = 0; d < hd; ++d) out[d] = 0.0f;
  for (int64_t p = 0; p < n_ctx; ++p) {
    const int32_t block = query.block_table[p / kv.block_size];
    dequantize_row(kv.v_type, kv.v_row(block, static_cast<int>(p % kv.block_size)), row.data(), kv.row_elems());
    const float* v = row.data() + static_cast<int64_t>(kvh) * hd;
    const float w = scores[p] / sum;
    for (int d = 0; d < hd; ++d) out[d] += w * v[d];
  }
}

}  // namespace

namespace ref {
void paged_attention(const AttentionQuery& query, const KvLayerView& kv, int n_heads, float scale) {
  std::vector<float> scores(static_cast<size_t>(query.first_pos + query.n_q));
  std::vector<float> row(static_cast<size_t>(kv.row_elems()));
  for (int i = 0; i < query.n_q; ++i)
    for (int h = 0; h < n_heads; ++h) attend_one(query, kv, n_heads, scale, i, h, scores, row);
}
}  // namespace ref

void paged_attention(const AttentionQuery& query, const KvLayerView& kv, int n_heads, float scale, ThreadPool& pool) {
  const BlockOps ops = ops_for(active_simd_target());
  // Query tiles of up to 32 tokens keep the tile's accumulators small; with few KV
  // heads, more tiles give every thread work.
  const int tile = std::max(1, std::min(32, (query.n_q + pool.num_threads() - 1) / pool.num_threads()));
  const int tiles = (query.n_q + tile - 1) / tile;
  const int64_t tasks = static_cast<int64_t>(kv.n_kv_heads) * tiles;
  const int64_t work = static_cast<int64_t>(query.n_q) * (query.first_pos + query.n_q) * n_heads;
  pool.parallel_for(tasks, 1, work < 4096 ? tasks + 1 : 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int kvh = static_cast<int>(t / tiles);
      const int i0 = static_cast<int>(t % tiles) * tile;
      attend_tile(query, kv, n_heads, scale, kvh, i0, std::min(query.n_q, i0 + tile), ops);
    }
  });
}

}  // namespace llms
