// ExpertLoadMetrics: a mixture of experts' routing, as Prometheus series: tokens routed
// to each expert (summed over layers) and the load imbalance, max / mean tokens per
// expert (1 is a perfectly even load; with top-k routing and no capacity limit, as
// served models run, it is what a training-side capacity_factor would have to cover).
//
// Thread-safety: observe() on the engine thread only.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "metrics/metrics.h"

namespace llms {

// max / mean of `counts` (1 when all are 0 or there are none).
double load_imbalance(std::span<const int64_t> counts);

class ExpertLoadMetrics {
 public:
  explicit ExpertLoadMetrics(Registry& r);
  // load: tokens routed so far, [n_layer * n_expert] layer-major (ForwardState::expert_load()).
  void observe(std::span<const int64_t> load, int n_expert);
  // The imbalance of the counts summed over layers (0 before any routing); any thread.
  double overall() const { return overall_.load(std::memory_order_relaxed); }

 private:
  Family<Counter>& routed_;    // by expert
  Family<Gauge>& imbalance_;   // by layer, and "all" for the counts summed over layers
  std::vector<Counter*> routed_by_expert_;
  std::vector<Gauge*> imbalance_by_layer_;  // the last is "all"
  std::vector<int64_t> last_;               // per expert, summed over layers, at the last observe
  std::vector<int64_t> sums_;
  std::atomic<double> overall_{0.0};
};

}  // namespace llms
