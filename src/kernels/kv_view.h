// The kernels' view of one layer of a paged KV cache: where the keys and values of a
// block's token rows sit. The kv module owns the layout (kv/kv_layout.h: which layout
// a storage type gets, the strides) and fills this view; the attention kernels read
// through it and the model writes through kv_store(), so no one else computes an
// address in the cache, and kernels need nothing from kv.
//
// A block of `block_size` token rows takes block_bytes(is_k) of K (and of V); each
// side is in one of four layouts (KvSideLayout), described at the enum.
//
// Thread-safety: a view is a value; kv_load_row() only reads.
#pragma once

#include <cstdint>

#include "quant/block_formats.h"
#include "tensor/dtype.h"

namespace llms {

// How one side (K or V) of a layer's block is laid out.
enum class KvSideLayout {
  // Per row, for quantized types whose blocks straddle heads:
  // [block_size][n_kv_heads * head_dim].
  kRows,
  // Per head ("tiled"), for F32, F16 and BF16: K as [n_kv_heads][head_dim][block_size]
  // (each head's keys already transposed, as the score product reads them) and V as
  // [n_kv_heads][block_size][head_dim], so a head's keys and values for a block are
  // two contiguous runs (2 KiB each for 64 F16 dimensions in blocks of 16).
  kTiled,
  // Q8_0 keys by column, where blocks of 32 divide head_dim: per head, the blocks' F16
  // scales as [head_dim / 32][block_size], then the int8 values as
  // [head_dim][block_size] (transposed like the tiled keys: the score product decodes
  // 16 tokens of a dimension in one vector); the same bytes as Q8_0 rows. Keys only.
  kColumns,
  // Rows per head, for the other quantized types whose blocks divide head_dim (Q8_0
  // values, Q4_0 at head_dim 64): [n_kv_heads][block_size][head_dim], so that a head's
  // part of a block is one contiguous run, as attention reads it.
  kHeadRows,
};

// Where one KV head's values sit in a cache row of the row layout: `skip` bytes in,
// `bytes` long, `elems` values; or the whole row (head_only false) where the type's
// quantization blocks straddle heads.
struct HeadPart {
  bool head_only;
  int64_t skip, bytes, elems;
};

// One layer's K and V storage. Made by make_kv_layer_view() (kv/kv_layout.h), which
// computes the strides once (they are read for every key of every attention call).
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
  KvSideLayout k_layout = KvSideLayout::kRows;
  KvSideLayout v_layout = KvSideLayout::kRows;
  // Bytes from block b to block b + 1: the block's own size where one layer's blocks
  // are packed together, more where the cache interleaves layers (KvCache).
  int64_t k_block_stride = 0;
  int64_t v_block_stride = 0;
  // The bytes of one head's part of a row in the rows-per-head layout (0 otherwise).
  int64_t k_head_row_bytes = 0;
  int64_t v_head_row_bytes = 0;

  int64_t row_elems() const { return static_cast<int64_t>(n_kv_heads) * head_dim; }
  DType type(bool is_k) const { return is_k ? k_type : v_type; }
  KvSideLayout layout(bool is_k) const { return is_k ? k_layout : v_layout; }
  bool tiled(bool is_k) const { return layout(is_k) == KvSideLayout::kTiled; }
  bool head_rows(bool is_k) const { return layout(is_k) == KvSideLayout::kHeadRows; }
  bool k_columns() const { return k_layout == KvSideLayout::kColumns; }
  // Whether a head's part of a block is one contiguous run (every layout but rows).
  bool head_runs(bool is_k) const { return layout(is_k) != KvSideLayout::kRows; }
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
  // Head `kvh`'s part of a block in the tiled, by-column and rows-per-head layouts
  // (head_dim * block_size values).
  uint8_t* head(bool is_k, int32_t block, int kvh) const {
    return (is_k ? k_block(block) : v_block(block)) + kvh * (block_bytes(is_k) / n_kv_heads);
  }
  // Where value `e` (head e / head_dim, dimension e % head_dim) of row `row` sits in a
  // tiled block.
  uint8_t* tiled_value(bool is_k, int32_t block, int row, int64_t e) const {
    const int kvh = static_cast<int>(e / head_dim);
    const int64_t d = e % head_dim;
    const int64_t es = dtype_row_bytes(type(is_k), 1);
    return head(is_k, block, kvh) + (is_k ? d * block_size + row : static_cast<int64_t>(row) * head_dim + d) * es;
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

// Reads back the key (is_k) or value row of position `row` of `block` as floats
// ([n_kv_heads * head_dim]), whatever the layout: the scalar decoding, one row at a
// time (the reference attention and tests read the cache this way).
void kv_load_row(const KvLayerView& kv, bool is_k, int32_t block, int row, float* out);

}  // namespace llms
