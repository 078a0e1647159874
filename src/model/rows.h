// for_rows: element-wise work on a pass's token rows, split across the pool.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace llms {

// Rows run on the pool from this many: below, waking the workers costs more than the
// rows (single-stream decode stays on the caller).
inline constexpr int64_t kMinParallelRows = 4;

// fn(t0, t1) over rows [0, n), split across the pool. Every op so run works row by
// row, so the split changes no result.
template <typename F>
void for_rows(ThreadPool& pool, int64_t n, F&& fn) {
  pool.parallel_for(n, 1, kMinParallelRows, fn);
}

}  // namespace llms
