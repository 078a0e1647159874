// The thread pool of a microbenchmark: LLMSERVE_BENCH_THREADS threads (default 2).
#pragma once

#include <algorithm>
#include <cstdlib>

#include "base/thread_pool.h"

namespace llms {

inline int bench_threads() {
  const char* env = std::getenv("LLMSERVE_BENCH_THREADS");
  return env ? std::max(1, std::atoi(env)) : 2;
}

inline ThreadPool& bench_pool() {
  static ThreadPool p(bench_threads());
  return p;
}

}  // namespace llms
