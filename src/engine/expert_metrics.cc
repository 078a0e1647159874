#include "engine/expert_metrics.h"

#include <algorithm>
#include <string>

namespace llms {

double load_imbalance(std::span<const int64_t> counts) {
  if (counts.empty()) return 1.0;
  int64_t total = 0, most = 0;
  for (int64_t c : counts) total += c, most = std::max(most, c);
  if (total == 0) return 1.0;
  return static_cast<double>(most) * static_cast<double>(counts.size()) / static_cast<double>(total);
}

ExpertLoadMetrics::ExpertLoadMetrics(Registry& r)
    : routed_(r.counter_family("llmserve_moe_routed_tokens_total",
                               "Mixture of experts: tokens routed to each expert, summed over layers (a token counts "
                               "once per layer).",
                               {"expert"})),
      imbalance_(r.gauge_family("llmserve_moe_load_imbalance_ratio",
                                "Mixture of experts: max / mean tokens per expert since start, by layer (\"all\": "
                                "the counts summed over layers); 1 is an even load.",
                                {"layer"})) {}

void ExpertLoadMetrics::observe(std::span<const int64_t> load, int n_expert) {
  if (load.empty() || n_expert <= 0) return;
  const size_t experts = static_cast<size_t>(n_expert), layers = load.size() / experts;
  if (routed_by_expert_.empty()) {
    for (size_t e = 0; e < experts; ++e) routed_by_expert_.push_back(&routed_.with({std::to_string(e)}));
    for (size_t l = 0; l < layers; ++l) imbalance_by_layer_.push_back(&imbalance_.with({std::to_string(l)}));
    imbalance_by_layer_.push_back(&imbalance_.with({"all"}));
    last_.assign(experts, 0);
  }
  sums_.assign(experts, 0);
  for (size_t l = 0; l < layers; ++l) {
    const std::span<const int64_t> row = load.subspan(l * experts, experts);
    imbalance_by_layer_[l]->set(load_imbalance(row));
    for (size_t e = 0; e < experts; ++e) sums_[e] += row[e];
  }
  overall_.store(load_imbalance(sums_), std::memory_order_relaxed);
  imbalance_by_layer_.back()->set(overall());
  for (size_t e = 0; e < experts; ++e) {
    routed_by_expert_[e]->inc(static_cast<double>(sums_[e] - last_[e]));
    last_[e] = sums_[e];
  }
}

}  // namespace llms
