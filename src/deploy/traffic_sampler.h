// TrafficSampler: a step observer on a version's engine that watches every finished
// request for the canary decision (canary_judge.h) and sets aside a share of them for
// cross-scoring (quality_monitor.h):
//   - per request: whether it failed ("error"), whether its output is abnormal
//     (output_check.h), and its mean inter-token latency, as streams the deployer
//     reads and resets when a canary starts;
//   - a deterministic share of the requests that completed (stop or length): their
//     prompt and output tokens, queued (bounded: when the scorer falls behind, new
//     samples are dropped and counted, never waited for).
//
// Thread-safety: the hooks run on the engine thread; take(), streams() and reset()
// from any thread (one mutex, held for a copy or a move only).
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "deploy/canary_judge.h"
#include "engine/step_observer.h"
#include "metrics/metrics.h"

namespace llms {

// One finished request's text, for cross-scoring.
struct TrafficSample {
  std::vector<int32_t> tokens;  // prompt, then output
  int64_t prompt_len = 0;
};

// What the decision reads per side.
struct TrafficStreams {
  MeanStream errors;    // 1: ended "error", 0: completed
  MeanStream abnormal;  // of completed requests: 1 when any abnormal kind applied
  MeanStream log_itl;   // of completed requests with 2+ tokens: log of the mean inter-token latency (s)
  int64_t dropped = 0;  // samples dropped because the queue was full
};

class TrafficSampler : public StepObserver {
 public:
  // `share` in [0, 1]: the fraction of completed requests queued for scoring.
  // `pending` (may be null): a gauge that shows the queue's length.
  TrafficSampler(double share, Gauge* pending, size_t max_pending = 64)
      : share_(share), max_pending_(max_pending), pending_gauge_(pending) {}
  void on_finish(const Sequence& s, const FinishEvent& fe) override;

  double share() const { return share_; }
  // Up to `max` queued samples, oldest first.
  std::vector<TrafficSample> take(size_t max);
  TrafficStreams streams() const;
  // Forgets the streams and the queue (a new comparison starts).
  void reset();

 private:
  const double share_;
  const size_t max_pending_;
  Gauge* pending_gauge_;
  mutable std::mutex mu_;
  double credit_ = 0;
  std::deque<TrafficSample> pending_;
  TrafficStreams streams_;
};

}  // namespace llms
