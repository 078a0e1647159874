// StatsWindow: the last N steps and the last N finished requests of one engine, kept
// for the dashboard (GET /v1/stats) so that an operator needs no Prometheus to see
// what the engine did a minute ago. Two fixed-size rings allocated once: memory stays
// bounded by EngineConfig::stats_window however long the server runs.
//
// Thread-safety: record_step() and record_request() on the engine thread; snapshot()
// from any thread. A short mutex guards the rings: the engine thread copies one small
// struct under it, a reader copies the rings out and formats them after unlocking.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

#include "engine/finish_reason.h"

namespace llms {

struct StepSample {
  int64_t unix_ms = 0;         // when the step ended (wall clock, for charts)
  double duration_s = 0;       // the forward pass and sampling
  int32_t batch_tokens = 0;    // tokens computed (decodes + prefill chunks)
  int32_t prefill_tokens = 0;  // of them, prompt tokens
  int32_t token_budget = 0;    // max_batch_tokens: batch efficiency is batch_tokens / this
  int32_t batch_size = 0;      // sequences in the batch
  int32_t running = 0;         // after the step
  int32_t waiting = 0;
  int32_t kv_blocks_used = 0;
  int32_t kv_blocks_total = 0;
  int64_t rss_bytes = 0;       // process memory (anonymous), as last read
};

struct RequestSample {
  int64_t unix_ms = 0;          // when it ended
  double queue_s = 0;           // arrival to first scheduled
  double ttft_s = 0;            // arrival to first token (0: none)
  double itl_s = 0;             // mean inter-token latency (0: fewer than two tokens)
  double e2e_s = 0;
  double compute_s = 0;         // forward passes it took part in
  int32_t prompt_tokens = 0;
  int32_t cached_prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t priority = 0;
  FinishReason reason = FinishReason::kStop;
};

inline constexpr int kNumFinishReasons = static_cast<int>(FinishReason::kError) + 1;

// Oldest first.
struct StatsWindowSnapshot {
  int capacity = 0;
  std::vector<StepSample> steps;
  std::vector<RequestSample> requests;
  int64_t steps_total = 0;     // since start, not only the window's
  int64_t requests_total = 0;
  int64_t prompt_tokens_total = 0;
  int64_t completion_tokens_total = 0;
  std::array<int64_t, kNumFinishReasons> finished_by_reason{};
};

class StatsWindow {
 public:
  // `capacity` samples of each kind; 0 keeps none (totals are still counted).
  explicit StatsWindow(int capacity);

  void record_step(const StepSample& s);
  void record_request(const RequestSample& r);
  StatsWindowSnapshot snapshot() const;

 private:
  template <typename T>
  struct Ring {
    std::vector<T> slots;  // sized once
    int64_t pushed = 0;
    void push(const T& v);
    std::vector<T> in_order() const;
  };

  const int capacity_;
  mutable std::mutex mu_;
  Ring<StepSample> steps_;
  Ring<RequestSample> requests_;
  int64_t prompt_tokens_ = 0, completion_tokens_ = 0;
  std::array<int64_t, kNumFinishReasons> by_reason_{};
};

}  // namespace llms
