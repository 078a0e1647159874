#include "kv/kv_cache.h"

#include <fmt/format.h>

#include <algorithm>

namespace llms {

int64_t KvCacheConfig::bytes_per_block() const {
  const int64_t row = static_cast<int64_t>(n_kv_heads) * head_dim;
  return static_cast<int64_t>(n_layer) * block_size * (dtype_row_bytes(k_type, row) + dtype_row_bytes(v_type, row));
}

Status KvCacheConfig::validate() const {
  if (n_layer <= 0 || n_kv_heads <= 0 || head_dim <= 0) return invalid_argument("KV cache: model dimensions must be positive");
  LLMS_RETURN_IF_ERROR(check_kv_block_size(block_size, "kv_block_size"));
  if (num_blocks <= 0) return invalid_argument("KV cache: the memory budget leaves no block");
  const int64_t row = static_cast<int64_t>(n_kv_heads) * head_dim;
  for (DType t : {k_type, v_type}) {
    if (!row_fits_blocks(t, row)) {
      return invalid_argument(fmt::format("KV type {} needs rows that are multiples of {} elements; this model's KV row "
                                          "has {}",
                                          dtype_name(t), dtype_info(t).block_size, row));
    }
  }
  return ok_status();
}

KvCache::KvCache(const KvCacheConfig& config) : config_(config) {
  LLMS_CHECK(config.validate().ok(), config.validate().to_string());
  const int64_t row = static_cast<int64_t>(config.n_kv_heads) * config.head_dim;
  k_block_bytes_ = config.block_size * dtype_row_bytes(config.k_type, row);
  v_block_bytes_ = config.block_size * dtype_row_bytes(config.v_type, row);
  // Huge pages: attention streams the blocks. Block-major, so that the first block
  // commits one page, not one per layer. Unless asked to commit it all now, a page is
  // committed when a block on it is first written: resident memory follows the blocks
  // ever in use, and the steps that first write a page pay its zeroing (in a 32-sequence
  // decode step of llama-110m, a tenth of the step while new blocks are taken).
  storage_ = AlignedBuffer::huge(static_cast<size_t>(config.bytes_per_block() * config.num_blocks), /*zero=*/false);
  if (config.commit_at_start) storage_.commit();
}

KvLayerView KvCache::layer(int l) {
  uint8_t* base = reinterpret_cast<uint8_t*>(storage_.data()) + (k_block_bytes_ + v_block_bytes_) * l;
  KvLayerView view = make_kv_layer_view(base, base + k_block_bytes_, config_.k_type, config_.v_type, config_.block_size,
                                         config_.n_kv_heads, config_.head_dim);
  view.k_block_stride = view.v_block_stride = config_.bytes_per_block();
  return view;
}

int64_t KvCache::discard_blocks(std::span<const int32_t> blocks) {
  std::vector<int32_t> ids(blocks.begin(), blocks.end());
  std::sort(ids.begin(), ids.end());
  const auto per_block = static_cast<size_t>(config_.bytes_per_block());
  int64_t discarded = 0;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i + 1;
    while (j < ids.size() && ids[j] == ids[j - 1] + 1) ++j;  // a run of adjacent blocks
    discarded += storage_.discard(static_cast<size_t>(ids[i]) * per_block, (j - i) * per_block);
    i = j;
  }
  return discarded;
}

}  // namespace llms
