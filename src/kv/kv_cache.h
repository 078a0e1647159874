// KvCache: the memory that holds every layer's keys and values, carved into blocks of
// `block_size` token rows. It only stores bytes; which sequence owns which block is
// the business of the block pool (block_pool.h).
//
// Layout: block-major, block b holding every layer's K (k_type) and V (v_type) rows
// of its tokens, [num_blocks][n_layer][K, V]; inside a layer's part, per KV head for
// float types and per token row for quantized ones (see kv_layout.h). The memory is
// reserved at start and committed by the kernel as blocks are first written: the
// block pool hands out low ids first, so what is resident follows the most blocks in
// use at once, in steps of one huge page (a few blocks), never the whole reservation.
//
// Thread-safety: the owner (the engine thread) writes through the forward pass; no
// internal locking.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "kv/kv_layout.h"
#include "tensor/dtype.h"

namespace llms {

struct KvCacheConfig {
  int n_layer = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int block_size = 16;
  int32_t num_blocks = 0;
  DType k_type = DType::kF32;
  DType v_type = DType::kF32;
  // Commit all the cache's memory at construction rather than as blocks are first
  // written (see KvCache()).
  bool commit_at_start = false;

  // Bytes one block takes across all layers (K and V).
  int64_t bytes_per_block() const;
  // INVALID_ARGUMENT naming the field for impossible settings.
  Status validate() const;
};

class KvCache {
 public:
  explicit KvCache(const KvCacheConfig& config);

  const KvCacheConfig& config() const { return config_; }
  int32_t num_blocks() const { return config_.num_blocks; }
  int block_size() const { return config_.block_size; }
  int64_t total_bytes() const { return static_cast<int64_t>(storage_.size()); }

  KvLayerView layer(int l);

  // Returns the memory of `blocks` (ids no sequence holds: their contents are never
  // read again before being written) to the operating system, runs of adjacent ids at
  // once. Returns the bytes given back (whole pages only).
  int64_t discard_blocks(std::span<const int32_t> blocks);

 private:
  KvCacheConfig config_;
  AlignedBuffer storage_;
  int64_t k_block_bytes_ = 0;  // one layer's K part of a block
  int64_t v_block_bytes_ = 0;
};

}  // namespace llms
