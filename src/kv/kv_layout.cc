#include "kv/kv_layout.h"

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "kernels/convert.h"
#include "quant/block_formats.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

// Bytes of one value of a type stored per head (F32, F16, BF16).
int64_t value_bytes(DType type) { return dtype_row_bytes(type, 1); }

bool tiled_type(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// The layout of one side of type `t`; `is_k`: the keys' (the only side stored by column).
KvSideLayout side_layout(DType t, bool is_k, int head_dim) {
  if (tiled_type(t)) return KvSideLayout::kTiled;
  const bool whole = head_dim % dtype_info(t).block_size == 0;  // blocks within a head
  if (is_k && t == DType::kQ8_0 && whole) return KvSideLayout::kColumns;
  return whole ? KvSideLayout::kHeadRows : KvSideLayout::kRows;
}

// Value d of `src` to `dst` + d * stride values: a key row into its column of a tiled
// block (a fixed-size copy per value, not a memcpy call each).
template <typename T>
void scatter_column(const uint8_t* src, uint8_t* dst, int64_t n, int64_t stride) {
  for (int64_t d = 0; d < n; ++d) {
    T v;
    std::memcpy(&v, src + d * sizeof(T), sizeof(T));
    std::memcpy(dst + d * stride * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
  }
}

// Each head's keys of `x` encoded as Q8_0, then spread into the columns of row `row`.
void store_key_columns(const KvLayerView& kv, int32_t block, int row, const float* x) {
  const int64_t hd = kv.head_dim, B = kv.block_size;
  thread_local std::vector<BlockQ8_0> blocks;  // one head's, reused
  blocks.resize(static_cast<size_t>(hd / kQK));
  for (int h = 0; h < kv.n_kv_heads; ++h) {
    quantize_row_nearest(DType::kQ8_0, x + h * hd, blocks.data(), hd);
    uint16_t* scales = kv.column_scales(block, h);
    int8_t* values = kv.column_values(block, h);
    for (int64_t g = 0; g < hd / kQK; ++g) {
      const BlockQ8_0& b = blocks[static_cast<size_t>(g)];
      scales[g * B + row] = b.d;
      for (int64_t i = 0; i < kQK; ++i) values[(g * kQK + i) * B + row] = b.qs[i];
    }
  }
}

void store_row(const KvLayerView& kv, bool is_k, int32_t block, int row, const float* x) {
  const DType type = kv.type(is_k);
  switch (kv.layout(is_k)) {
    case KvSideLayout::kColumns:
      store_key_columns(kv, block, row, x);
      return;
    case KvSideLayout::kHeadRows:
      for (int h = 0; h < kv.n_kv_heads; ++h) {
        quantize_row_nearest(type, x + static_cast<int64_t>(h) * kv.head_dim, kv.head_row(is_k, block, h, row),
                             kv.head_dim);
      }
      return;
    case KvSideLayout::kRows:
      quantize_row_nearest(type, x, kv.row(is_k, block, row), kv.row_elems());
      return;
    case KvSideLayout::kTiled:
      break;
  }
  const int64_t es = value_bytes(type), hd = kv.head_dim;
  thread_local std::vector<uint8_t> bytes;  // the row in the storage type, reused
  bytes.resize(static_cast<size_t>(kv.row_elems() * es));
  if (type == DType::kF16) {  // every key and value of an F16 cache: on the SIMD target
    f32_to_f16_row(x, reinterpret_cast<uint16_t*>(bytes.data()), kv.row_elems());
  } else {
    quantize_row_nearest(type, x, bytes.data(), kv.row_elems());
  }
  for (int h = 0; h < kv.n_kv_heads; ++h) {
    const uint8_t* src = bytes.data() + h * hd * es;
    uint8_t* dst = kv.tiled_value(is_k, block, row, h * hd);
    if (is_k) {  // dimension d of the head's keys is block_size values further on
      if (es == 2) {
        scatter_column<uint16_t>(src, dst, hd, kv.block_size);
      } else if (es == 4) {
        scatter_column<uint32_t>(src, dst, hd, kv.block_size);
      } else {
        for (int64_t d = 0; d < hd; ++d) std::memcpy(dst + d * kv.block_size * es, src + d * es, static_cast<size_t>(es));
      }
    } else {
      std::memcpy(dst, src, static_cast<size_t>(hd * es));
    }
  }
}

}  // namespace

Status check_kv_block_size(int block_size, const char* key) {
  if (block_size >= kMinKvBlockSize && block_size <= kMaxKvBlockSize) return ok_status();
  return invalid_argument(fmt::format("{}: {} is not in {}..{}", key, block_size, kMinKvBlockSize, kMaxKvBlockSize));
}

KvLayerView make_kv_layer_view(uint8_t* k, uint8_t* v, DType k_type, DType v_type, int block_size, int n_kv_heads,
                               int head_dim) {
  KvLayerView view;
  view.k = k;
  view.v = v;
  view.k_type = k_type;
  view.v_type = v_type;
  view.block_size = block_size;
  view.n_kv_heads = n_kv_heads;
  view.head_dim = head_dim;
  view.k_stride = dtype_row_bytes(k_type, view.row_elems());
  view.v_stride = dtype_row_bytes(v_type, view.row_elems());
  view.k_block_stride = view.k_block_bytes();
  view.v_block_stride = view.v_block_bytes();
  view.k_layout = side_layout(k_type, true, head_dim);
  view.v_layout = side_layout(v_type, false, head_dim);
  view.k_head_row_bytes = view.head_rows(true) ? dtype_row_bytes(k_type, head_dim) : 0;
  view.v_head_row_bytes = view.head_rows(false) ? dtype_row_bytes(v_type, head_dim) : 0;
  return view;
}

void kv_store(const KvLayerView& kv, const int32_t* block_table, int64_t pos, const float* k, const float* v) {
  const int32_t block = block_table[pos / kv.block_size];
  const int row = static_cast<int>(pos % kv.block_size);
  store_row(kv, true, block, row, k);
  store_row(kv, false, block, row, v);
}

}  // namespace llms
