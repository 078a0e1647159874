#include "model/routing.h"

#include <algorithm>
#include <cmath>

#include "kernels/ops.h"

namespace llms {

void ExpertRouting::route(const float* logits, int64_t n, int n_expert, int k, bool normalize) {
  const size_t nk = static_cast<size_t>(n) * static_cast<size_t>(k);
  chosen_.resize(nk);
  chosen_w_.resize(nk);
  probs_.resize(static_cast<size_t>(n_expert));
  offsets.assign(static_cast<size_t>(n_expert) + 1, 0);
  for (int64_t t = 0; t < n; ++t) {
    std::copy_n(logits + t * n_expert, n_expert, probs_.data());
    softmax(probs_.data(), n_expert);
    int32_t* ids = chosen_.data() + t * k;
    float* w = chosen_w_.data() + t * k;
    // k passes of a selection: the highest remaining probability, the lower index on ties.
    float chosen_sum = 0.0f;
    for (int j = 0; j < k; ++j) {
      int best = -1;
      for (int e = 0; e < n_expert; ++e) {
        if (std::find(ids, ids + j, e) != ids + j) continue;
        if (best < 0 || probs_[static_cast<size_t>(e)] > probs_[static_cast<size_t>(best)]) best = e;
      }
      ids[j] = best;
      w[j] = probs_[static_cast<size_t>(best)];
      chosen_sum += w[j];
      ++offsets[static_cast<size_t>(best) + 1];
    }
    if (normalize) {
      for (int j = 0; j < k; ++j) w[j] /= chosen_sum;
    }
  }
  for (int e = 0; e < n_expert; ++e) offsets[static_cast<size_t>(e) + 1] += offsets[static_cast<size_t>(e)];
  tokens.resize(nk);
  weights.resize(nk);
  fill_.assign(offsets.begin(), offsets.end() - 1);
  for (int64_t t = 0; t < n; ++t) {
    for (int j = 0; j < k; ++j) {
      const size_t at = static_cast<size_t>(t * k + j);
      const int32_t slot = fill_[static_cast<size_t>(chosen_[at])]++;
      tokens[static_cast<size_t>(slot)] = static_cast<int32_t>(t);
      weights[static_cast<size_t>(slot)] = chosen_w_[at];
    }
  }
}

}  // namespace llms
