// KvCache: the memory that holds every layer's keys and values, carved into blocks of
// `block_size` token rows. It only stores bytes; which sequence owns which block is
// the business of the block pool (block_pool.h).
//
// Layout per layer: K [num_blocks] blocks of k_type, V the same in v_type; inside a
// block, per KV head for float types and per token row for quantized ones (see
// kv_layout.h).
//
// Thread-safety: the owner (the engine thread) writes through the forward pass; no
// internal locking.
#pragma once

#include <cstdint>
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

 private:
  KvCacheConfig config_;
  AlignedBuffer storage_;
  int64_t k_layer_bytes_ = 0;
  int64_t v_layer_bytes_ = 0;
};

}  // namespace llms
