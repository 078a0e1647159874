// The KV block layout: where the keys and values of a token position sit in one
// layer's storage. The kv module owns it; the attention kernels read blocks through
// KvLayerView and the model writes rows with kv_store(), so no one else computes an
// address in the cache.
//
// One layer's cache is a pool of blocks, each holding `block_size` token rows of
// [n_kv_heads, head_dim] keys (and values) in the cache's storage type; a sequence
// reaches its tokens through a block table (position p lives in block
// table[p / block_size], row p % block_size).
//
// A block of `block_size` token rows takes k_block_bytes() of K (and v_block_bytes()
// of V) in either layout, chosen by the storage type:
//  - per head ("tiled"), for F32, F16 and BF16: K as [n_kv_heads][head_dim][block_size]
//    (each head's keys already transposed, as the score product reads them) and V as
//    [n_kv_heads][block_size][head_dim], so a head's keys and values for a block are
//    two contiguous runs (2 KiB each for 64 F16 dimensions in blocks of 16);
//  - Q8_0 keys by column, where blocks of 32 divide head_dim: per head, the blocks'
//    F16 scales as [head_dim / 32][block_size], then the int8 values as
//    [head_dim][block_size] (transposed like the tiled keys: the score product decodes
//    16 tokens of a dimension in one vector); the same bytes as Q8_0 rows;
//  - rows per head, for the other quantized types whose blocks divide head_dim (Q8_0
//    values, Q4_0 at head_dim 64): [n_kv_heads][block_size][head_dim], so that a
//    head's part of a block is one contiguous run, as attention reads it;
//  - per row, for the other quantized types, whose blocks straddle heads:
//    [block_size][n_kv_heads * head_dim].
//
// Thread-safety: a view is a value; kv_store() writes only the row it is given.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "quant/block_formats.h"
#include "tensor/dtype.h"

namespace llms {

// The block sizes (tokens per block) a KV cache may have.
inline constexpr int kMinKvBlockSize = 8;
inline constexpr int kMaxKvBlockSize = 128;
// INVALID_ARGUMENT naming `key` when `block_size` is outside the range.
Status check_kv_block_size(int block_size, const char* key);

// Where one KV head's values sit in a cache row of the row layout: `skip` bytes in,
// `bytes` long, `elems` values; or the whole row (head_only false) where the type's
// quantization blocks straddle heads.
struct HeadPart {
  bool head_only;
  int64_t skip, bytes, elems;
};

// One layer's K and V storage. Made by make(), which computes the strides once (they
// are read for every key of every attention call).
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
  // Bytes from block b to block b + 1: the block's own size where one layer's blocks
  // are packed together (make()), more where the cache interleaves layers (KvCache).
  int64_t k_block_stride = 0;
  int64_t v_block_stride = 0;
  // Q8_0 keys by column (see above).
  bool k_columns = false;
  // The rows-per-head layout (quantized types whose blocks divide head_dim), and the
  // bytes of one head's part of a row in it.
  bool k_head_rows = false;
  bool v_head_rows = false;
  int64_t k_head_row_bytes = 0;
  int64_t v_head_row_bytes = 0;

  static bool tiled_type(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

  static KvLayerView make(uint8_t* k, uint8_t* v, DType k_type, DType v_type, int block_size, int n_kv_heads,
                          int head_dim) {
    KvLayerView view{k, v, k_type, v_type, block_size, n_kv_heads, head_dim, 0, 0, tiled_type(k_type),
                     tiled_type(v_type)};
    view.k_stride = dtype_row_bytes(k_type, view.row_elems());
    view.v_stride = dtype_row_bytes(v_type, view.row_elems());
    view.k_block_stride = view.k_block_bytes();
    view.v_block_stride = view.v_block_bytes();
    const bool k_whole = head_dim % dtype_info(k_type).block_size == 0;  // blocks within a head
    view.k_columns = k_type == DType::kQ8_0 && k_whole;
    view.k_head_rows = !view.k_tiled && !view.k_columns && k_whole;
    view.v_head_rows = !view.v_tiled && head_dim % dtype_info(v_type).block_size == 0;
    view.k_head_row_bytes = view.k_head_rows ? dtype_row_bytes(k_type, head_dim) : 0;
    view.v_head_row_bytes = view.v_head_rows ? dtype_row_bytes(v_type, head_dim) : 0;
    return view;
  }

  int64_t row_elems() const { return static_cast<int64_t>(n_kv_heads) * head_dim; }
  DType type(bool is_k) const { return is_k ? k_type : v_type; }
  bool tiled(bool is_k) const { return is_k ? k_tiled : v_tiled; }
  bool head_rows(bool is_k) const { return is_k ? k_head_rows : v_head_rows; }
  // Whether a head's part of a block is one contiguous run (every layout but rows).
  bool head_runs(bool is_k) const { return tiled(is_k) || head_rows(is_k) || (is_k && k_columns); }
  int64_t stride(bool is_k) const { return is_k ? k_stride : v_stride; }
  int64_t k_row_bytes() const { return k_stride; }
  int64_t v_row_bytes() const { return v_stride; }
  int64_t k_block_bytes() const { return k_stride * block_size; }
  int64_t v_block_bytes() const { return v_stride * block_size; }
  int64_t block_bytes(bool is_k) const { return stride(is_k) * block_size; }
  uint8_t* k_block(int32_t block) const { return k + static_cast<int64_t>(block) * k_block_stride; }
  uint8_t* v_block(int32_t block) const { return v + static_cast<int64_t>(block) * v_block_stride; }
  // Row `row` of a block in the row layout.
  uint8_t* row(bool is_k, int32_t block, int row) const {
    return (is_k ? k_block(block) : v_block(block)) + row * stride(is_k);
  }
  // Head `kvh`'s part of a block in the tiled and rows-per-head layouts (head_dim *
  // block_size values).
  uint8_t* head(bool is_k, int32_t block, int kvh) const {
    return (is_k ? k_block(block) : v_block(block)) + kvh * (block_bytes(is_k) / n_kv_heads);
  }
  // Head `kvh`'s keys of a block by column: F16 scales [head_dim / kQK][block_size]
  // and int8 values [head_dim][block_size].
  uint16_t* column_scales(int32_t block, int kvh) const {
    return reinterpret_cast<uint16_t*>(head(true, block, kvh));
  }
  int8_t* column_values(int32_t block, int kvh) const {
    return reinterpret_cast<int8_t*>(head(true, block, kvh) + head_dim / kQK * block_size * sizeof(uint16_t));
  }
  // Row `row` of head `kvh`'s part of a block in the rows-per-head layout.
  uint8_t* head_row(bool is_k, int32_t block, int kvh, int row) const {
    return head(is_k, block, kvh) + row * (is_k ? k_head_row_bytes : v_head_row_bytes);
  }
  // Where head `kvh` sits in a row of the row layout (types whose blocks straddle heads).
  HeadPart head_part(bool is_k, int kvh) const {
    const DType t = type(is_k);
    if (head_dim % dtype_info(t).block_size != 0) return {false, 0, stride(is_k), row_elems()};
    return {true, dtype_row_bytes(t, static_cast<int64_t>(kvh) * head_dim), dtype_row_bytes(t, head_dim), head_dim};
  }
};

// Stores the key and value rows ([n_kv_heads * head_dim] floats) of position `pos`.
void kv_store(const KvLayerView& kv, const int32_t* block_table, int64_t pos, const float* k, const float* v);

// Reads back the key (is_k) or value row of position `row` of `block` as floats
// ([n_kv_heads * head_dim]), whatever the layout.
void kv_load_row(const KvLayerView& kv, bool is_k, int32_t block, int row, float* out);

}  // namespace llms
