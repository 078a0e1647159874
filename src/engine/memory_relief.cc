#include "engine/memory_relief.h"

#include <malloc.h>

#include <algorithm>

#include "base/log.h"
#include "base/memory.h"

namespace llms {
namespace {

constexpr int64_t kReleaseIntervalNs = 1'000'000'000;

}  // namespace

bool MemoryRelief::due(int64_t now, bool pressure, bool idle) {
  if (!pressure) {
    last_ns_ = -1;
    idle_done_ = false;
    return false;
  }
  if (idle) {  // once per idle spell: nothing more is freed until work runs again
    if (idle_done_) return false;
    idle_done_ = true;
    last_ns_ = now;
    return true;
  }
  idle_done_ = false;
  if (last_ns_ >= 0 && now - last_ns_ < kReleaseIntervalNs) return false;
  last_ns_ = now;
  return true;
}

MemoryReleased MemoryRelief::release(KvBlockManager& kv, ModelRunner& runner, ResultCache& results) {
  MemoryReleased r;
  r.rss_before = process_rss_bytes();
  r.evicted_blocks = kv.evict_idle();
  r.discarded_kv_bytes = runner.discard_kv_blocks(kv.free_blocks());
  const ResultCacheStats cached = results.stats();
  results.clear();
  malloc_trim(0);
  r.rss_after = process_rss_bytes();
  const int64_t fell = std::max<int64_t>(0, r.rss_before - r.rss_after);
  metrics_.memory_releases.inc();
  metrics_.memory_released_bytes.inc(static_cast<double>(fell));
  log_info("memory pressure: evicted {} cached prefix blocks, returned {:.1f} MiB of free KV pages, "
           "dropped {} cached results; process memory {:.1f} -> {:.1f} MiB",
           r.evicted_blocks, static_cast<double>(r.discarded_kv_bytes) / (1 << 20), cached.entries,
           static_cast<double>(r.rss_before) / (1 << 20), static_cast<double>(r.rss_after) / (1 << 20));
  return r;
}

}  // namespace llms
