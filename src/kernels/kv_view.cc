#include "kernels/kv_view.h"

#include "quant/half.h"
#include "quant/row_convert.h"

namespace llms {

void kv_load_row(const KvLayerView& kv, bool is_k, int32_t block, int row, float* out) {
  const DType type = kv.type(is_k);
  switch (kv.layout(is_k)) {
    case KvSideLayout::kColumns: {
      const int64_t hd = kv.head_dim, B = kv.block_size;
      for (int h = 0; h < kv.n_kv_heads; ++h) {
        const uint16_t* scales = kv.column_scales(block, h);
        const int8_t* values = kv.column_values(block, h);
        for (int64_t d = 0; d < hd; ++d) {
          out[h * hd + d] = f16_to_f32(scales[d / kQK * B + row]) * static_cast<float>(values[d * B + row]);
        }
      }
      return;
    }
    case KvSideLayout::kHeadRows:
      for (int h = 0; h < kv.n_kv_heads; ++h) {
        dequantize_row(type, kv.head_row(is_k, block, h, row), out + static_cast<int64_t>(h) * kv.head_dim, kv.head_dim);
      }
      return;
    case KvSideLayout::kRows:
      dequantize_row(type, kv.row(is_k, block, row), out, kv.row_elems());
      return;
    case KvSideLayout::kTiled:
      for (int64_t e = 0; e < kv.row_elems(); ++e) dequantize_row(type, kv.tiled_value(is_k, block, row, e), out + e, 1);
      return;
  }
}

}  // namespace llms
