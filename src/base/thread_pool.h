// ThreadPool: a fixed set of worker threads for the kernels. The calling thread takes
// part in every job, so a pool of N threads starts N-1 workers.
//
// Thread-safety: run()/parallel_for() may be called by one thread at a time (the
// engine thread, or a CLI's main thread). The split of work is a pure function of
// (n, align, num_threads), so results never depend on timing.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace llms {

class ThreadPool {
 public:
  // num_threads <= 0 means one per hardware thread.
  explicit ThreadPool(int num_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(task) for task in [0, num_tasks) with num_tasks <= num_threads(), task 0
  // on the caller; returns when all are done.
  template <typename F>
  void run(int num_tasks, F&& fn) {
    auto call = [](void* ctx, int task) { (*static_cast<F*>(ctx))(task); };
    run_erased(num_tasks, call, &fn);
  }

  // Splits [0, n) into at most num_threads() contiguous ranges whose starts are
  // multiples of `align` and calls fn(begin, end) for each non-empty one. Runs inline
  // when n < min_parallel (too little work to be worth waking workers).
  template <typename F>
  void parallel_for(int64_t n, int64_t align, int64_t min_parallel, F&& fn) {
    if (n <= 0) return;
    const int64_t units = (n + align - 1) / align;
    const int tasks = static_cast<int>(std::min<int64_t>(num_threads_, units));
    if (tasks <= 1 || n < min_parallel) {
      fn(int64_t{0}, n);
      return;
    }
    run(tasks, [&](int task) {
      const int64_t begin = std::min(n, units * task / tasks * align);
      const int64_t end = std::min(n, units * (task + 1) / tasks * align);
      if (begin < end) fn(begin, end);
    });
  }

 private:
  using TaskFn = void (*)(void*, int);
  void run_erased(int num_tasks, TaskFn fn, void* ctx);
  void worker_loop(int index);

  int num_threads_;
  std::vector<std::thread> workers_;
  // Job state, published by bumping generation_.
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  int num_tasks_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace llms
