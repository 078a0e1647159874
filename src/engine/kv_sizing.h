// How large an engine's KV cache is, and how long a sequence it can hold: the one
// place that turns EngineConfig's memory settings into a number of blocks.
//
// Thread-safety: a pure function.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "engine/engine_config.h"
#include "model/model.h"

namespace llms {

struct KvSizing {
  int32_t num_blocks = 0;
  // K and V of every layer; of a pipeline stage, of the stage with the most layers:
  // every stage allocates rank 0's block count, so each stays within the budget.
  int64_t bytes_per_block = 0;
  int context_length = 0;       // positions a sequence may reach: the asked context, or less when the cache is smaller
  int asked_context = 0;        // config.context_length, or the model's training context
};

// kv_cache_bytes when set; otherwise what max_running sequences of the full context
// need, capped at a tenth of the memory limit. INVALID_ARGUMENT when the KV types do
// not fit the model or the cache holds no block.
Result<KvSizing> size_kv_cache(const Model& model, const EngineConfig& config);

}  // namespace llms
