#include "base/thread_pool.h"

#include "base/clock.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace llms {
namespace {

// Spinning briefly before sleeping keeps the wake-up latency of back-to-back kernel
// calls (one per layer op during decode) in the sub-microsecond range. The spin is
// bounded in time, not in iterations (a pause takes 10-140 cycles depending on the
// CPU), and a parked pool does not spin at all.
constexpr int64_t kSpinNs = 100'000;
// The clock is read once per this many pauses.
constexpr int kSpinCheckEvery = 64;

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

constexpr uint64_t kChunkMask = 0xFFFFFFFFu;
// Between jobs: generation 0 (no worker's next job), next chunk beyond any job's.
constexpr uint64_t kClosed = kChunkMask;

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  num_threads_ = num_threads;
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  state_.fetch_add(uint64_t{1} << 32, std::memory_order_acq_rel);
  state_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::work_on(uint64_t gen) {
  for (;;) {
    uint64_t s = state_.load(std::memory_order_acquire);
    if ((s >> 32) != gen) return;
    const int64_t chunk = static_cast<int64_t>(s & kChunkMask);
    // Read before claiming: if a newer job replaced it meanwhile, the claim fails.
    if (chunk >= num_chunks_.load(std::memory_order_acquire)) return;
    if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    // The job cannot change until this chunk is counted in done_.
    const int64_t total = num_chunks_.load(std::memory_order_relaxed);
    const bool one_each = one_each_.load(std::memory_order_relaxed);
    fn_(ctx_, chunk);
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == total) done_.notify_one();
    if (one_each) return;
  }
}

void ThreadPool::run_erased(int64_t num_chunks, bool one_each, TaskFn fn, void* ctx) {
  if (workers_.empty() || num_chunks <= 1) {
    for (int64_t c = 0; c < num_chunks; ++c) fn(ctx, c);
    return;
  }
  if (one_each) num_chunks = std::min<int64_t>(num_chunks, num_threads_);
  // Close the previous job before changing num_chunks_: a worker that read the old
  // job's state (all of its chunks claimed) and then the new, larger num_chunks_
  // would otherwise claim a chunk past the old job's end, run a chunk of the new
  // job twice and count it in done_. The release store of num_chunks_ makes the
  // closed state visible to whoever reads the new count, so its claim fails.
  parked_.store(false, std::memory_order_relaxed);
  state_.store(kClosed, std::memory_order_relaxed);
  fn_ = fn;
  ctx_ = ctx;
  num_chunks_.store(num_chunks, std::memory_order_release);
  one_each_.store(one_each, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  if (++generation_ == 0) ++generation_;  // 0 is the state before the first job
  const uint64_t gen = generation_;
  // run() keeps task 0 for the caller: the workers' claims start at 1.
  state_.store((gen << 32) | (one_each ? 1 : 0), std::memory_order_release);
  state_.notify_all();
  if (one_each) {
    fn(ctx, 0);
    done_.fetch_add(1, std::memory_order_acq_rel);
  } else {
    work_on(gen);
  }
  const int64_t wait_start = wait_ns_ != nullptr ? now_ns() : 0;
  // The workers are at work on this job: waiting for them is short, so the caller spins
  // (then sleeps, if a worker was descheduled).
  int64_t spin_until = 0;
  for (int i = 0;; ++i) {
    const int64_t d = done_.load(std::memory_order_acquire);
    if (d == num_chunks) break;
    if (i % kSpinCheckEvery == 0) {
      const int64_t t = now_ns();
      if (spin_until == 0) spin_until = t + kSpinNs;
      if (t >= spin_until) {
        done_.wait(d, std::memory_order_acquire);
        continue;
      }
    }
    cpu_relax();
  }
  if (wait_ns_ != nullptr) *wait_ns_ += now_ns() - wait_start;
}

void ThreadPool::park() {
  parked_.store(true, std::memory_order_relaxed);
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    uint64_t s = state_.load(std::memory_order_acquire);
    // Spin for the next job of a busy caller; sleep at once when parked.
    int64_t spin_until = 0;
    for (int i = 0; (s >> 32) == seen && !parked_.load(std::memory_order_relaxed); ++i) {
      if (i % kSpinCheckEvery == 0) {
        const int64_t t = now_ns();
        if (spin_until == 0) spin_until = t + kSpinNs;
        if (t >= spin_until) break;
      }
      cpu_relax();
      s = state_.load(std::memory_order_acquire);
    }
    while ((s >> 32) == seen) {
      state_.wait(s, std::memory_order_acquire);
      s = state_.load(std::memory_order_acquire);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = s >> 32;
    work_on(seen);
  }
}

}  // namespace llms
