#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include "base/clock.h"

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace llms {
namespace {

TEST(ThreadPoolTest, RunCallsEveryTaskExactlyOnce) {
  ThreadPool pool(4);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::atomic<int>> hits(4);
    pool.run(4, [&](int t) { hits[t].fetch_add(1); });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

// A parked pool's workers sleep; the next job wakes them, and every task still runs
// once on its own thread (run() gives each task a thread: the workers must be awake).
TEST(ThreadPoolTest, ParkedPoolWakesForTheNextJob) {
  ThreadPool pool(3);
  for (int round = 0; round < 100; ++round) {
    pool.park();
    std::mutex mu;
    std::set<std::thread::id> threads;
    std::atomic<int> arrived{0};
    pool.run(3, [&](int) {
      {
        std::lock_guard<std::mutex> lock(mu);
        threads.insert(std::this_thread::get_id());
      }
      // All three tasks must be running at once to pass this barrier: a task left
      // to a sleeping worker would hang the test (and ctest's timeout fails it).
      arrived.fetch_add(1);
      while (arrived.load() < 3) {
      }
    });
    EXPECT_EQ(threads.size(), 3u);
  }
}

TEST(ThreadPoolTest, WaitCounterAddsTheCallersWait) {
  ThreadPool pool(2);
  int64_t waited = 0;
  pool.set_wait_counter(&waited);
  std::atomic<bool> caller_done{false};
  pool.run(2, [&](int t) {
    if (t == 0) {
      caller_done = true;
    } else {
      // The worker finishes 1 ms after the caller's task has: the caller must have
      // waited most of it (its clock starts a moment after its task ends).
      while (!caller_done.load()) {
      }
      const int64_t t0 = now_ns();
      while (now_ns() - t0 < 1'000'000) {
      }
    }
  });
  EXPECT_GE(waited, 500'000);
  const int64_t before = waited;
  pool.set_wait_counter(nullptr);
  pool.run(2, [](int) {});
  EXPECT_EQ(waited, before);
}

TEST(ThreadPoolTest, ParallelForCoversRangeOnceWithAlignedStarts) {
  ThreadPool pool(3);
  for (int64_t n : {1, 7, 64, 1000, 1001}) {
    std::vector<int> seen(n, 0);
    std::mutex mu;
    std::set<int64_t> starts;
    pool.parallel_for(n, 8, 0, [&](int64_t b, int64_t e) {
      std::lock_guard<std::mutex> lock(mu);
      starts.insert(b);
      for (int64_t i = b; i < e; ++i) seen[i]++;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "n=" << n << " i=" << i;
    for (int64_t s : starts) EXPECT_EQ(s % 8, 0);
  }
}

// Back-to-back jobs of changing sizes: a worker still finishing its look at one job
// while the next is being set up must never claim a chunk of either that is not its
// own. Each chunk runs exactly once and every job has finished when the call returns.
TEST(ThreadPoolTest, BackToBackJobsOfChangingSizesRunEachChunkOnce) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    std::vector<std::atomic<int>> hits(16);
    for (int job = 0; job < 200000; ++job) {
      const int64_t n = 1 + (job * 7) % 12;  // sizes go up and down
      for (int64_t i = 0; i < n; ++i) hits[i].store(0, std::memory_order_relaxed);
      pool.parallel_for(n, 1, 0, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(std::memory_order_relaxed), 1) << "threads " << threads << " job " << job << " i " << i;
    }
  }
}

TEST(ThreadPoolTest, SmallWorkRunsInline) {
  ThreadPool pool(2);
  int calls = 0;  // not atomic: must be a single inline call
  pool.parallel_for(10, 1, 100, [&](int64_t b, int64_t e) {
    ++calls;
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 10);
  });
  EXPECT_EQ(calls, 1);
}

TEST(ThreadPoolTest, OtherThreadsTakeOverTheChunksOfAStalledOne) {
  // A chunk that runs on a worker stalls until every other chunk is done: only a pool
  // whose other threads take the remaining chunks can finish.
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> done{0};
    std::atomic<int> stalled{0};
    const int64_t n = 64;
    std::atomic<int> chunks{0};
    pool.parallel_for(n, 1, 0, [&](int64_t, int64_t) { chunks.fetch_add(1); });
    ASSERT_GT(chunks.load(), pool.num_threads());  // finer than one range per thread
    std::atomic<int64_t> total{0};
    pool.parallel_for(n, 1, 0, [&](int64_t b, int64_t e) {
      if (std::this_thread::get_id() != caller && stalled.fetch_add(1) == 0) {
        while (done.load() < chunks - 1) std::this_thread::yield();
      }
      total += e - b;
      done.fetch_add(1);
    });
    EXPECT_EQ(total.load(), n);
    EXPECT_EQ(done.load(), chunks);
  }
}

TEST(ThreadPoolTest, SingleThreadPoolWorks) {
  ThreadPool pool(1);
  int64_t sum = 0;
  pool.parallel_for(100, 1, 0, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum, 4950);
}

}  // namespace
}  // namespace llms
