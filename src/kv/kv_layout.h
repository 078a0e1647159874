// The KV block layout: where the keys and values of a token position sit in one
// layer's storage. The kv module owns it: make_kv_layer_view() decides each side's
// layout (kernels/kv_view.h describes the four) and the strides, and kv_store() writes
// rows into it; the attention kernels read blocks through the view, so no one else
// computes an address in the cache.
//
// One layer's cache is a pool of blocks, each holding `block_size` token rows of
// [n_kv_heads, head_dim] keys (and values) in the cache's storage type; a sequence
// reaches its tokens through a block table (position p lives in block
// table[p / block_size], row p % block_size).
//
// The storage type picks the layout of each side:
//  - F32, F16 and BF16: tiled (per head, keys transposed);
//  - Q8_0 keys, where blocks of 32 divide head_dim: by column;
//  - the other quantized types whose blocks divide head_dim (Q8_0 values, Q4_0 at
//    head_dim 64): rows per head;
//  - the other quantized types, whose blocks straddle heads: rows.
//
// Thread-safety: a view is a value; kv_store() writes only the row it is given.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kernels/kv_view.h"
#include "tensor/dtype.h"

namespace llms {

// The block sizes (tokens per block) a KV cache may have.
inline constexpr int kMinKvBlockSize = 8;
inline constexpr int kMaxKvBlockSize = 128;
// INVALID_ARGUMENT naming `key` when `block_size` is outside the range.
Status check_kv_block_size(int block_size, const char* key);

// The view of one layer whose blocks of K start at `k` and of V at `v`, each layer's
// blocks packed together (KvCache::layer() widens the block strides where layers
// interleave).
KvLayerView make_kv_layer_view(uint8_t* k, uint8_t* v, DType k_type, DType v_type, int block_size, int n_kv_heads,
                               int head_dim);

// Stores the key and value rows ([n_kv_heads * head_dim] floats) of position `pos`.
void kv_store(const KvLayerView& kv, const int32_t* block_table, int64_t pos, const float* k, const float* v);

}  // namespace llms
