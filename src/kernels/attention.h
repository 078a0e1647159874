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
// kernels need not know it. Made by make(), which computes the strides once (they are
// read for every key of every attention call).
//
// A block of `block_size` token rows takes block_bytes() of K (and of V) in either
// layout, chosen by the storage type:
//  - per head ("tiled"), for F32, F16 and BF16: K as [n_kv_heads][head_dim][block_size]
//    (each head's keys already transposed, as the score product reads them) and V as
//    [n_kv_heads][block_size][head_dim], so a head's keys and values for a block are
//    two contiguous runs (2 KiB each for 64 F16 dimensions in blocks of 16);
//  - per row, for the quantized types, whose blocks run along the row:
//    [block_size][n_kv_heads * head_dim].
struct KvLayerView {
  uint8_t* k = nullptr;
  uint8_t* v = nullptr;
  DType k_type = DType::kF32;
  DType v_type = DType::kF32;
  int block_size = 16;
  int n_kv_heads = 0;
  int head_dim = 0;
  int64_t k_stride = 0;  // bytes per token row of K (row layout; the block's share otherwise)
  int64_t v_stride = 0;
  bool k_tiled = false;
  bool v_tiled = false;

  static bool tiled_type(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

  static KvLayerView make(uint8_t* k, uint8_t* v, DType k_type, DType v_type, int block_size, int n_kv_heads,
                          int head_dim) {
    KvLayerView view{k, v, k_type, v_type, block_size, n_kv_heads, head_dim, 0, 0, tiled_type(k_type),
                     tiled_type(v_type)};
    view.k_stride = dtype_row_bytes(k_type, view.row_elems());
    view.v_stride = dtype_row_bytes(v_type, view.row_elems());
    return view;
  }

  int64_t row_elems() const { return static_cast<int64_t>(n_kv_heads) * head_dim; }
  int64_t k_row_bytes() const { return k_stride; }
  int64_t v_row_bytes() const { return v_stride; }
  int64_t k_block_bytes() const { return k_stride * block_size; }
  int64_t v_block_bytes() const { return v_stride * block_size; }
  uint8_t* k_block(int32_t block) const { return k + static_cast<int64_t>(block) * k_block_bytes(); }
  uint8_t* v_block(int32_t block) const { return v + static_cast<int64_t>(block) * v_block_bytes(); }
  // Row `row` of a block in the row layout.
  uint8_t* k_row(int32_t block, int row) const { return k_block(block) + row * k_stride; }
  uint8_t* v_row(int32_t block, int row) const { return v_block(block) + row * v_stride; }
  // Head `kvh`'s part of a block in the tiled layout (head_dim * block_size values).
  uint8_t* k_head(int32_t block, int kvh) const { return k_block(block) + kvh * (k_block_bytes() / n_kv_heads); }
  uint8_t* v_head(int32_t block, int kvh) const { return v_block(block) + kvh * (v_block_bytes() / n_kv_heads); }
};

// Stores the key and value rows ([n_kv_heads * head_dim] floats) of position `pos`.
void kv_store(const KvLayerView& kv, const int32_t* block_table, int64_t pos, const float* k, const float* v);

// Reads back the key (is_k) or value row of position `row` of `block` as floats
// ([n_kv_heads * head_dim]), whatever the layout.
void kv_load_row(const KvLayerView& kv, bool is_k, int32_t block, int row, float* out);

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
