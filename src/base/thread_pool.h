// ThreadPool: a fixed set of worker threads for the kernels. The calling thread takes
// part in every job, so a pool of N threads starts N-1 workers.
//
// Thread-safety: run()/parallel_for() may be called by one thread at a time (the
// engine thread, or a CLI's main thread). parallel_for() cuts its range into chunks
// that are a pure function of (n, align, num_threads), and any thread may run any
// chunk: results never depend on timing as long as fn depends only on its range, and
// a worker the OS has descheduled delays nobody (the others take its chunks).
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

  // Adds to *counter (null: nothing) the nanoseconds the calling thread waits, after
  // its own share of each job, for the workers to finish theirs (the step profile).
  void set_wait_counter(int64_t* counter) { wait_ns_ = counter; }

  // Between jobs, workers spin for up to 100 us for the next one, then sleep. park()
  // (by the caller, at the end of a burst of jobs: an engine step) sends them to sleep
  // now, so that they take no core from other threads while the caller does other
  // work; the next job wakes them (a futex wake-up, bench: BM_PoolWakeUp).
  void park();

  // Calls fn(task) for task in [0, num_tasks) with num_tasks <= num_threads(), each on
  // its own thread and task 0 on the caller; returns when all are done.
  template <typename F>
  void run(int num_tasks, F&& fn) {
    auto call = [](void* ctx, int64_t task) { (*static_cast<F*>(ctx))(static_cast<int>(task)); };
    run_erased(num_tasks, /*one_each=*/true, call, &fn);
  }

  // Splits [0, n) into contiguous ranges whose starts are multiples of `align` (a few
  // per thread, so that threads finishing early take over the rest) and calls
  // fn(begin, end) once for each non-empty one. Runs inline when n < min_parallel (too
  // little work to be worth waking workers).
  template <typename F>
  void parallel_for(int64_t n, int64_t align, int64_t min_parallel, F&& fn) {
    if (n <= 0) return;
    const int64_t units = (n + align - 1) / align;
    const int tasks = static_cast<int>(std::min<int64_t>(num_threads_, units));
    if (tasks <= 1 || n < min_parallel) {
      fn(int64_t{0}, n);
      return;
    }
    const int64_t chunks = std::min<int64_t>(units, int64_t{tasks} * kChunksPerThread);
    auto chunk = [&](int64_t c) {
      const int64_t begin = std::min(n, units * c / chunks * align);
      const int64_t end = std::min(n, units * (c + 1) / chunks * align);
      if (begin < end) fn(begin, end);
    };
    auto call = [](void* ctx, int64_t c) { (*static_cast<decltype(chunk)*>(ctx))(c); };
    run_erased(chunks, /*one_each=*/false, call, &chunk);
  }

 private:
  static constexpr int64_t kChunksPerThread = 4;
  using TaskFn = void (*)(void*, int64_t);

  void run_erased(int64_t num_chunks, bool one_each, TaskFn fn, void* ctx);
  // Claims and runs chunks of job generation `gen` until none is left (for run():
  // after one).
  void work_on(uint64_t gen);
  void worker_loop();

  int num_threads_;
  std::vector<std::thread> workers_;
  // The current job: written by the caller before it publishes the job's generation
  // in state_ (high 32 bits; low 32 bits: the next chunk to claim). A thread reads
  // them only after claiming a chunk of that generation, which cannot complete (so
  // the job cannot be replaced) before that thread has run the chunk.
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<int64_t> num_chunks_{0};
  std::atomic<bool> one_each_{false};
  std::atomic<uint64_t> state_{0};
  std::atomic<int64_t> done_{0};
  uint32_t generation_ = 0;
  int64_t* wait_ns_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<bool> parked_{false};
};

}  // namespace llms
