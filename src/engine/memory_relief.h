// MemoryRelief: what the engine gives back to the operating system under memory
// pressure (the breaker open: process memory above the high watermark; or an idle
// engine above the low mark), so that the breaker can close again: idle cached prefix blocks are evicted, the pages of every free KV block
// are returned (MADV_DONTNEED; a block is written before it is read, so nothing is
// lost), the result cache is emptied and malloc's free memory is trimmed. It runs at
// once when the breaker opens, at most once a second while work runs (a page given
// back costs a fault when its block is next used), and once when the engine falls idle.
//
// Thread-safety: engine thread only; it owns nothing but its timing.
#pragma once

#include <cstdint>

#include "engine/engine_metrics.h"
#include "engine/model_runner.h"
#include "engine/result_cache.h"
#include "kv/kv_block_manager.h"

namespace llms {

struct MemoryReleased {
  int32_t evicted_blocks = 0;       // idle cached prefix blocks dropped
  int64_t discarded_kv_bytes = 0;   // free KV pages returned
  int64_t rss_before = 0, rss_after = 0;
};

class MemoryRelief {
 public:
  explicit MemoryRelief(EngineMetrics& metrics) : metrics_(metrics) {}

  // Whether a release is due now, under pressure: once per idle spell; while work
  // runs, at once and then at most once a second.
  bool due(int64_t now, bool pressure, bool idle);
  // Releases what can be released, counts it in the metrics and logs it.
  MemoryReleased release(KvBlockManager& kv, ModelRunner& runner, ResultCache& results);

 private:
  EngineMetrics& metrics_;
  int64_t last_ns_ = -1;     // last release under this pressure (-1: none yet)
  bool idle_done_ = false;   // released since the engine fell idle
};

}  // namespace llms
