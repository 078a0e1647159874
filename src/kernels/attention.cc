#include "kernels/attention.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
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

// Where head `kvh`'s values sit in a cache row of `type` (`row_bytes` long): `skip`
// bytes in, `bytes` long, `elems` values; or the whole row (head_only false) where
// the type's blocks straddle heads.
struct HeadPart {
  bool head_only;
  int64_t skip, bytes, elems;
};
HeadPart head_part(const KvLayerView& kv, DType type, int64_t row_bytes, int kvh) {
  if (kv.head_dim % dtype_info(type).block_size != 0) return {false, 0, row_bytes, kv.row_elems()};
  return {true, dtype_row_bytes(type, static_cast<int64_t>(kvh) * kv.head_dim), dtype_row_bytes(type, kv.head_dim),
          kv.head_dim};
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// Keys transposed straight from the cache for the common shape (AVX-512, blocks of
// 16 rows, F16 or F32 keys, head_dim a multiple of 16): 16 x 16 tiles go through
// registers instead of a decode to rows and an element-by-element transpose.
__attribute__((target("avx512f"))) void transpose16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0x88);
    t[4 + i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0xDD);
    t[8 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0x88);
    t[12 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0xDD);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xDD);
  }
}

bool keys_transposable_avx512(const KvLayerView& kv) {
  return kv.block_size == 16 && kv.head_dim % 16 == 0 && (kv.k_type == DType::kF16 || kv.k_type == DType::kF32);
}

// kt[d * 16 + j] = dimension d of key j of head kvh, rows [0, n) of `block`; columns
// from n on are zero.
__attribute__((target("avx512f"))) void keys_transposed_avx512(const KvLayerView& kv, int32_t block, int n, int kvh,
                                                                float* kt) {
  const bool f16 = kv.k_type == DType::kF16;
  const int64_t skip = head_part(kv, kv.k_type, kv.k_stride, kvh).skip;
  for (int d0 = 0; d0 < kv.head_dim; d0 += 16) {
    __m512 r[16];
    for (int j = 0; j < 16; ++j) {
      const uint8_t* src = kv.k_row(block, j) + skip + d0 * (f16 ? 2 : 4);
      r[j] = j >= n ? _mm512_setzero_ps()
             : f16  ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)))
                    : _mm512_loadu_ps(reinterpret_cast<const float*>(src));
    }
    transpose16(r);
    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(kt + (d0 + i) * 16, r[i]);
  }
}
#pragma GCC diagnostic pop

using F16RowFn = void (*)(const uint16_t*, float*, int64_t);

// ---------------------------------------------------------------------------------

// Rows of one KV block as floats, for one KV head: points into the cache for F32;
// else decodes the head's part of each row when the type's blocks do not straddle
// heads (F16, BF16, and 32-value blocks when head_dim is a multiple of 32), or whole
// rows when they do.
class BlockRows {
 public:
  BlockRows(const KvLayerView& kv, bool is_k, F16RowFn f16_row)
      : kv_(kv), is_k_(is_k), type_(is_k ? kv.k_type : kv.v_type), f16_row_(f16_row) {
    head_only_ = type_ != DType::kF32 && head_part(kv, type_, 0, 0).head_only;
    stride_ = head_only_ ? kv.head_dim : kv.row_elems();
    if (type_ != DType::kF32) buf_.resize(static_cast<size_t>(kv.block_size * stride_));
  }
  // Makes rows [0, n) of `block` available; row(r) then points at head `kvh`.
  void load(int32_t block, int n, int kvh) {
    block_ = block;
    kvh_ = kvh;
    if (type_ == DType::kF32) return;
    const HeadPart part = head_part(kv_, type_, is_k_ ? kv_.k_stride : kv_.v_stride, kvh);
    for (int r = 0; r < n; ++r) {
      const uint8_t* src = (is_k_ ? kv_.k_row(block, r) : kv_.v_row(block, r)) + part.skip;
      float* dst = buf_.data() + r * stride_;
      if (type_ == DType::kF16) {
        f16_row_(reinterpret_cast<const uint16_t*>(src), dst, part.elems);
      } else {
        dequantize_row(type_, src, dst, part.elems);
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

// Brings the part of head `kvh` of every row of `block` (keys and values) towards the
// caches.
void prefetch_block(const KvLayerView& kv, int32_t block, int kvh) {
  const HeadPart k = head_part(kv, kv.k_type, kv.k_stride, kvh), v = head_part(kv, kv.v_type, kv.v_stride, kvh);
  for (int r = 0; r < kv.block_size; ++r) {
    for (int64_t i = 0; i < k.bytes; i += 64) __builtin_prefetch(kv.k_row(block, r) + k.skip + i, 0, 3);
    for (int64_t i = 0; i < v.bytes; i += 64) __builtin_prefetch(kv.v_row(block, r) + v.skip + i, 0, 3);
  }
}

// One task: KV head `kvh`, query tokens [i0, i1) of the chunk, all heads of the group.
// Row r = (i - i0) * group + g is query token i, head kvh * group + g.
void attend_tile(const AttentionQuery& q, const KvLayerView& kv, int n_heads, float scale, int kvh, int i0, int i1,
                 const KernelTable& kt_ops) {
  const int hd = kv.head_dim, B = kv.block_size;
  const int group = n_heads / kv.n_kv_heads;
  const int n_rows = (i1 - i0) * group;
  const int score_stride = (B + 15) / 16 * 16;
  std::vector<float> m(static_cast<size_t>(n_rows), -INFINITY), l(static_cast<size_t>(n_rows), 0.0f);
  std::vector<float> acc(static_cast<size_t>(n_rows) * hd, 0.0f), scores(static_cast<size_t>(n_rows) * score_stride);
  std::vector<const float*> qrow(static_cast<size_t>(n_rows));
  for (int i = i0; i < i1; ++i)
    for (int g = 0; g < group; ++g)
      qrow[static_cast<size_t>((i - i0) * group + g)] = q.q + (static_cast<int64_t>(i) * n_heads + kvh * group + g) * hd;
  // The block's keys transposed ([hd][B]); only the columns of keys a row may see
  // are read.
  std::vector<float> kt(static_cast<size_t>(hd) * B, 0.0f);
  const bool keys_fast = kt_ops.target == SimdTarget::kAvx512 && keys_transposable_avx512(kv);
  const bool values_f16 = kv.v_type == DType::kF16 && hd % 16 == 0;
  const int64_t v_skip = head_part(kv, kv.v_type, kv.v_stride, kvh).skip;
  // Rows decoded to floats, for the keys and values not read in place.
  std::optional<BlockRows> keys, vals;
  if (!keys_fast) keys.emplace(kv, true, kt_ops.f16_row);
  if (!values_f16) vals.emplace(kv, false, kt_ops.f16_row);
  AttentionRows a;
  a.block = B;
  a.head_dim = hd;
  a.scale = scale;
  a.kt = kt.data();
  a.scores = scores.data();
  // Rows [r0, r0 + rows) see keys [0, valid) of the loaded block.
  auto run = [&](int r0, int rows, int valid) {
    a.rows = rows;
    a.valid = valid;
    a.q = qrow.data() + r0;
    a.m = m.data() + r0;
    a.l = l.data() + r0;
    a.acc = acc.data() + static_cast<int64_t>(r0) * hd;
    kt_ops.attention_rows(a);
  };
  const int64_t last_pos = q.first_pos + i1 - 1;
  for (int64_t b = 0; b * B <= last_pos; ++b) {
    const int64_t base = b * B;
    const int rows = static_cast<int>(std::min<int64_t>(B, last_pos - base + 1));
    // The next block sits anywhere in the pool, out of the hardware prefetchers'
    // sight: ask for its rows now, while this block is computed (a TinyLlama token at
    // 512-712 positions: 1.4-1.7 ms of attention with, 1.8-2.1 ms without).
    if ((b + 1) * B <= last_pos) prefetch_block(kv, q.block_table[b + 1], kvh);
    if (keys_fast) {
      keys_transposed_avx512(kv, q.block_table[b], rows, kvh, kt.data());
    } else {
      keys->load(q.block_table[b], rows, kvh);
      for (int j = 0; j < rows; ++j) {
        const float* k = keys->row(j);
        for (int d = 0; d < hd; ++d) kt[static_cast<size_t>(d) * B + j] = k[d];
      }
    }
    if (values_f16) {  // read in place
      a.v_f16 = reinterpret_cast<const uint16_t*>(kv.v_row(q.block_table[b], 0) + v_skip);
      a.v_stride = kv.v_stride / 2;
    } else {
      vals->load(q.block_table[b], rows, kvh);
      a.v = vals->rows();
      a.v_stride = vals->stride();
    }
    // Tokens before the block see none of it; tokens inside it (causal) see a prefix
    // of it, each in a call of its own; the rest see all `rows` keys, in one call.
    int i = static_cast<int>(std::clamp<int64_t>(base - q.first_pos, i0, i1));
    for (; i < i1 && q.first_pos + i < base + rows - 1; ++i)
      run((i - i0) * group, group, static_cast<int>(q.first_pos + i - base + 1));
    if (i < i1) run((i - i0) * group, (i1 - i) * group, rows);
  }
  for (int r = 0; r < n_rows; ++r) {
    const int i = i0 + r / group, g = r % group;
    float* out = q.out + (static_cast<int64_t>(i) * n_heads + kvh * group + g) * hd;
    const float inv = 1.0f / l[static_cast<size_t>(r)];
    const float* ar = acc.data() + static_cast<int64_t>(r) * hd;
    for (int d = 0; d < hd; ++d) out[d] = ar[d] * inv;
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
  const KernelTable& kt_ops = active_kernels();
  // Query tiles of up to 32 tokens keep the tile's accumulators small; with few KV
  // heads, more tiles give every thread work.
  const int tile = std::max(1, std::min(32, (query.n_q + pool.num_threads() - 1) / pool.num_threads()));
  const int tiles = (query.n_q + tile - 1) / tile;
  const int64_t tasks = static_cast<int64_t>(kv.n_kv_heads) * tiles;
  const int64_t work = static_cast<int64_t>(query.n_q) * (query.first_pos + query.n_q) * n_heads;
  // Causal: a later query tile sees more keys. Threads claim tasks one at a time, the
  // costliest (last tiles) first, so that they finish together.
  auto task = [&](int64_t t) {
    const int kvh = static_cast<int>(t % kv.n_kv_heads);
    const int i0 = static_cast<int>(tiles - 1 - t / kv.n_kv_heads) * tile;
    attend_tile(query, kv, n_heads, scale, kvh, i0, std::min(query.n_q, i0 + tile), kt_ops);
  };
  if (work < 4096 || tasks == 1 || pool.num_threads() == 1) {
    for (int64_t t = 0; t < tasks; ++t) task(t);
    return;
  }
  std::atomic<int64_t> next{0};
  pool.run(static_cast<int>(std::min<int64_t>(pool.num_threads(), tasks)), [&](int) {
    for (int64_t t = next.fetch_add(1, std::memory_order_relaxed); t < tasks; t = next.fetch_add(1, std::memory_order_relaxed)) task(t);
  });
}

}  // namespace llms
