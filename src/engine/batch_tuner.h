// DynamicBatchTuner: the classic batcher's max_batch_size and max_delay_ms (the
// `dynamic` policy), from the measured arrival rate and the measured cost of a batch,
// within the operator's bounds.
//
// Model. A dynamic batch runs to completion before the next starts, so a batch of B
// requests occupies the engine for S(B), fitted as S(B) = alpha + beta * B (least
// squares over the last kBatchWindow batches; with one size only, alpha is their mean
// and beta 0). Requests arrive at lambda per second (the last kArrivalWindow arrivals;
// the rate falls when arrivals stop). The engine keeps up when each batch carries at
// least what arrives during one: lambda * S(B) <= utilization * B.
//
// Decision (after every batch, once kMinBatches have finished):
//   size  = the smallest B in [1, max_batch_size] that keeps up; max_batch_size when
//           none does. Smaller batches finish sooner, so the smallest that keeps up is
//           the one with the lowest latency;
//   delay = the time B - 1 more arrivals take at lambda, (B - 1) / lambda, so that a
//           batch fills on average just as its wait ends; at most max_delay_ms and at
//           most half the TTFT target when there is one; 0 when B is 1.
// It never oscillates: the target is recomputed only when its inputs moved by more
// than the hysteresis (20%) since it was last computed: the measured rate, or the
// batch cost predicted at the target size. The measured rate's noise at a steady
// Poisson load (about 6% over the 256-arrival window) stays inside it. The size then
// moves to its target by at most a doubling or a halving per batch, except upwards
// when the queue already holds a batch of the target size: then it goes there at once
// (the next batch is that size whatever the fit says, and a queue that long waits
// through every doubling).
//
// Thread-safety: engine thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace llms {

struct BatchTunerBounds {
  int max_batch_size = 8;     // the configured batch size: the upper bound
  double max_delay_ms = 20;   // the configured delay: the upper bound
  double ttft_target_s = 0;   // 0: none
};

struct BatchTunerDecision {
  int max_batch_size = 0;
  double max_delay_ms = 0;
  double arrival_rate = 0;       // requests per second when decided
  double predicted_batch_s = 0;  // S(max_batch_size)
  bool changed = false;          // differs from the previous decision
};

class DynamicBatchTuner {
 public:
  explicit DynamicBatchTuner(BatchTunerBounds bounds, double utilization = 0.8, double hysteresis = 0.2);

  // A request arrived at t_ns (the engine's clock).
  void arrival(int64_t t_ns);
  // A batch of `size` requests finished, `seconds` after it started, with `waiting`
  // requests queued. Returns true when a decision was made (read it with decision()).
  bool batch_done(int size, double seconds, int64_t now_ns, int waiting = 0);

  // Requests per second over the arrival window; lower when the newest is old.
  double arrival_rate(int64_t now_ns) const;
  double predict(int size) const { return alpha_ + beta_ * size; }
  double fixed_s() const { return alpha_; }
  double per_request_s() const { return beta_; }
  const BatchTunerDecision& decision() const { return decision_; }

  static constexpr size_t kArrivalWindow = 256;
  static constexpr size_t kBatchWindow = 32;
  static constexpr size_t kMinBatches = 4;

 private:
  struct Batch {
    double size, seconds;
  };
  void fit();

  BatchTunerBounds bounds_;
  double utilization_;
  double hysteresis_;
  std::vector<int64_t> arrivals_;  // ring of the last kArrivalWindow arrival times
  size_t next_arrival_ = 0;
  std::vector<Batch> batches_;     // ring of the last kBatchWindow batches
  size_t next_batch_ = 0;
  double alpha_ = 0, beta_ = 0;
  bool have_target_ = false;
  int target_size_ = 1;
  double target_rate_ = 0;  // the inputs the target was computed from
  double target_cost_ = 0;
  BatchTunerDecision decision_;
};

}  // namespace llms
