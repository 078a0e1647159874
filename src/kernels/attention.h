// Attention over a paged KV cache. The cache of one layer is a pool of blocks, each
// holding `block_size` token rows of [n_kv_heads, head_dim] keys (and values) in the
// cache's storage type; a sequence reaches its tokens through a block table
// (position p lives in block table[p / block_size], row p % block_size).
//
// paged_attention() is FlashAttention-style: it walks the sequence's blocks in order,
// keeping a running max, sum and weighted value per (query token, head) (online
// softmax), so memory never grows with the square of the length and nothing is padded.
// It is GQA-aware (each KV head's block is decoded once for its whole group of query
// heads) and causal within a chunk. Every (token, head) sees the same blocks in the
// same order whatever the chunking and the thread split, so its result is the same
// bit for bit; SIMD targets differ from the scalar reference only by rounding.
//
// Threading: paged_attention() splits (KV head, query tile) pairs across the pool.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "tensor/dtype.h"

namespace llms {

// One layer's K and V storage, owned by the kv module and described here so the
// kernels need not know it. Made by make(), which computes the row strides once (they
// are read for every key of every attention call).
struct KvLayerView {
  uint8_t* k = nullptr;
  uint8_t* v = nullptr;
  DType k_type = DType::kF32;
  DType v_type = DType::kF32;
  int block_size = 16;
  int n_kv_heads = 0;
  int head_dim = 0;
  int64_t k_stride = 0;  // bytes per token row of K
  int64_t v_stride = 0;

  static KvLayerView make(uint8_t* k, uint8_t* v, DType k_type, DType v_type, int block_size, int n_kv_heads,
                          int head_dim) {
    KvLayerView view{k, v, k_type, v_type, block_size, n_kv_heads, head_dim, 0, 0};
    view.k_stride = dtype_row_bytes(k_type, view.row_elems());
    view.v_stride = dtype_row_bytes(v_type, view.row_elems());
    return view;
  }

  int64_t row_elems() const { return static_cast<int64_t>(n_kv_heads) * head_dim; }
  int64_t k_row_bytes() const { return k_stride; }
  int64_t v_row_bytes() const { return v_stride; }
  uint8_t* k_row(int32_t block, int row) const { return k + (static_cast<int64_t>(block) * block_size + row) * k_stride; }
  uint8_t* v_row(int32_t block, int row) const { return v + (static_cast<int64_t>(block) * block_size + row) * v_stride; }
};

// Stores the key and value rows ([n_kv_heads * head_dim] floats) of position `pos`.
void kv_store(const KvLayerView& kv, const int32_t* block_table, int64_t pos, const float* k, const float* v);

// The new tokens of one sequence: queries of positions first_pos .. first_pos+n_q-1;
// the cache already holds their keys and values (kv_store first). Causal: query i
// sees positions [0, first_pos + i].
struct AttentionQuery {
  const float* q = nullptr;  // [n_q, n_heads, head_dim]
  int n_q = 0;
  int64_t first_pos = 0;
  const int32_t* block_table = nullptr;
  float* out = nullptr;      // [n_q, n_heads, head_dim]
};

void paged_attention(const AttentionQuery& query, const KvLayerView& kv, int n_heads, float scale, ThreadPool& pool);

namespace ref {
// Plain two-pass softmax attention, one (token, head) at a time.
void paged_attention(const AttentionQuery& query, const KvLayerView& kv, int n_heads, float scale);
}  // namespace ref

}  // namespace llms
