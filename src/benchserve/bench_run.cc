#include "benchserve/bench_run.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <semaphore>
#include <thread>

#include "base/clock.h"
#include "benchserve/arrival.h"
#include "benchserve/sender_pool.h"

namespace llms::benchserve {

namespace {

MetricsSnapshot scrape(const BenchOptions& o) {
  OpenAiClient client(o.base_url, o.api_key, 30);
  auto body = client.get("/metrics");
  return body.ok() ? parse_prometheus(body.value()) : MetricsSnapshot{};
}

// Counts requests in flight and finished; the caller waits for all of them.
struct Tracker {
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0, peak = 0, done = 0;

  void started() {
    std::lock_guard<std::mutex> lock(mu);
    peak = std::max(peak, ++in_flight);
  }
  void finished() {
    {
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
      ++done;
    }
    cv.notify_all();
  }
};

}  // namespace

RunOutput run_benchmark(const BenchOptions& o, const std::string& model, double rate,
                        const std::vector<BenchPrompt>& prompts, const ProgressFn& progress) {
  RunOutput out;
  out.rate = rate;
  const int n = static_cast<int>(prompts.size());
  out.outcomes.resize(prompts.size());
  out.metrics_before = scrape(o);
  const std::vector<double> offsets = arrival_offsets(n, rate, o.burstiness, o.seed);
  const int limit = o.max_concurrency > 0 ? o.max_concurrency : n;
  std::counting_semaphore<> slots(limit);
  Tracker tracker;
  const int64_t t0 = now_ns();
  {
    SenderPool pool(o.base_url, o.api_key, o.timeout_s);
    std::thread dispatcher([&] {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) {
        // Waiting for the arrival time is the load's schedule, not synchronization.
        std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                  std::chrono::duration<double>(offsets[static_cast<size_t>(i)])));
        slots.acquire();
        pool.submit([&, i](OpenAiClient& client) {
          RequestSpec spec{o.endpoint, model, prompts[static_cast<size_t>(i)].text,
                           prompts[static_cast<size_t>(i)].output_len, o.ignore_eos, o.temperature};
          tracker.started();
          out.outcomes[static_cast<size_t>(i)] = client.stream(spec, t0);
          slots.release();
          tracker.finished();
        });
      }
    });
    std::unique_lock<std::mutex> lock(tracker.mu);
    int shown = -1;
    while (tracker.done < n) {
      // Wakes for each finish; the timeout only redraws the bar.
      tracker.cv.wait_for(lock, std::chrono::milliseconds(200));
      if (progress && tracker.done != shown) {
        shown = tracker.done;
        lock.unlock();
        progress(shown, n);
        lock.lock();
      }
    }
    out.duration_s = static_cast<double>(now_ns() - t0) * 1e-9;
    out.peak_concurrency = tracker.peak;
    lock.unlock();
    dispatcher.join();
    if (progress && shown != n) progress(n, n);
  }
  out.metrics_after = scrape(o);
  return out;
}

ProgressFn terminal_progress(const std::string& label) {
  if (!isatty(STDERR_FILENO)) return {};
  return [label](int done, int total) {
    constexpr int kWidth = 40;
    const int filled = total > 0 ? done * kWidth / total : kWidth;
    std::fprintf(stderr, "\r%s [%s%s] %d/%d", label.c_str(), std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(kWidth - filled), ' ').c_str(), done, total);
    if (done == total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

}  // namespace llms::benchserve
