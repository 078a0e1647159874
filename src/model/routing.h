// ExpertRouting: which experts of a mixture each token of a pass goes to, and with
// what weight, grouped by expert so that each expert's weights are read once for all
// of its tokens.
#pragma once

#include <cstdint>
#include <vector>

namespace llms {

struct ExpertRouting {
  // Expert e's entries are [offsets[e], offsets[e + 1]), tokens ascending.
  std::vector<int32_t> offsets;  // [n_expert + 1]
  std::vector<int32_t> tokens;   // [n * k]: the token row of each entry
  std::vector<float> weights;    // [n * k]: its weight

  // logits: [n, n_expert] router outputs. Each token takes the k experts of highest
  // softmax probability (ties: the lower index), weighted by that probability, or by
  // it over the chosen ones' sum when `normalize` (a softmax over the chosen).
  void route(const float* logits, int64_t n, int n_expert, int k, bool normalize);

  int32_t count(int e) const { return offsets[e + 1] - offsets[e]; }

 private:
  std::vector<int32_t> chosen_;  // [n * k]
  std::vector<float> chosen_w_;
  std::vector<float> probs_;
  std::vector<int32_t> fill_;
};

}  // namespace llms
