#include "engine/kv_sizing.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/log.h"
#include "base/memory.h"

namespace llms {

Result<KvSizing> size_kv_cache(const Model& model, const EngineConfig& config) {
  KvCacheConfig probe = model.kv_config(1, config.kv.block_size, config.kv.k_type, config.kv.v_type);
  LLMS_RETURN_IF_ERROR(probe.validate());
  if (const TensorShard& own = model.shard(); own.pipelined()) {
    // Every stage's blocks hold as many heads as this rank's (stages split layers, not heads).
    for (int stage = 0; stage < own.stages; ++stage) {
      LLMS_ASSIGN_OR_RETURN(const TensorShard other,
                            TensorShard::plan(model.file(), model.config(), 0, 1, stage, own.stages));
      probe.n_layer = std::max(probe.n_layer, static_cast<int>(other.layers.count));
    }
  }
  KvSizing s;
  s.bytes_per_block = probe.bytes_per_block();
  s.asked_context = config.context_length > 0 ? config.context_length : model.config().n_ctx_train;
  if (const int max_pos = model.config().max_positions(); max_pos > 0 && s.asked_context > max_pos) {
    // Learned absolute positions (GPT-2) end at the table; a sliding window is exact
    // only for sequences within it (ModelConfig::max_positions).
    log_warn("context {} asked, but the model computes {} positions (learned positions or its attention window): "
             "context limited to that", s.asked_context, max_pos);
    s.asked_context = max_pos;
  }
  const int64_t limit = effective_memory_limit(config.admission.memory_limit_bytes);
  const int64_t blocks_per_ctx = (s.asked_context + config.kv.block_size - 1) / config.kv.block_size;
  int64_t blocks = config.kv.cache_bytes > 0
                       ? config.kv.cache_bytes / s.bytes_per_block
                       : std::min<int64_t>(limit / 10 / s.bytes_per_block,
                                           blocks_per_ctx * config.batching.max_running);
  blocks = std::min<int64_t>(blocks, 1 << 24);
  if (blocks < 1) {
    return invalid_argument(fmt::format("kv_cache_memory of {} bytes holds no block of {} bytes", config.kv.cache_bytes,
                                        s.bytes_per_block));
  }
  s.num_blocks = static_cast<int32_t>(blocks);
  s.context_length = static_cast<int>(std::min<int64_t>(s.asked_context, blocks * config.kv.block_size));
  if (s.context_length < s.asked_context) {
    log_warn("KV cache of {} blocks holds {} tokens: context limited to that (asked {})", blocks, s.context_length,
             s.asked_context);
  }
  return s;
}

}  // namespace llms
