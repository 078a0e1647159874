#include "engine/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace llms {

int32_t first_max_index(const float* x, int n) {
  if (n <= 0) return 0;
  // std::max_element keeps its first element when that is NaN (nothing compares
  // greater), and otherwise never takes a NaN: the first maximum of the rest.
  if (std::isnan(x[0])) return 0;
  // The maximum in 16 independent lanes (no chain of compares), then its first index.
  constexpr int kLanes = 16;
  float lane[kLanes];
  for (int j = 0; j < kLanes; ++j) lane[j] = x[0];
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
  }
  float m = lane[0];
  for (int j = 1; j < kLanes; ++j) m = lane[j] > m ? lane[j] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  // The first element equal to it (-0 equals +0, and max_element keeps the first of those too).
  for (int k = 0; k < n; ++k) {
    if (x[k] == m) return k;
  }
  return 0;
}

Status SamplingParams::validate() const {
  if (!(temperature >= 0.0f && temperature <= 100.0f)) {
    return invalid_argument(fmt::format("temperature must be between 0 and 100, got {}", temperature));
  }
  if (top_k < 0) return invalid_argument(fmt::format("top_k must be >= 0 (0 disables it), got {}", top_k));
  if (!(top_p > 0.0f && top_p <= 1.0f)) return invalid_argument(fmt::format("top_p must be in (0, 1], got {}", top_p));
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return invalid_argument(fmt::format("min_p must be in [0, 1], got {}", min_p));
  if (!(repetition_penalty > 0.0f && repetition_penalty <= 10.0f)) {
    return invalid_argument(fmt::format("repetition_penalty must be in (0, 10], got {}", repetition_penalty));
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return invalid_argument(fmt::format("presence_penalty must be between -2 and 2, got {}", presence_penalty));
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return invalid_argument(fmt::format("frequency_penalty must be between -2 and 2, got {}", frequency_penalty));
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return invalid_argument(fmt::format("logit_bias names the token id {}", id));
    if (!(bias >= -100.0f && bias <= 100.0f)) {
      return invalid_argument(fmt::format("logit_bias values must be between -100 and 100, got {}", bias));
    }
  }
  return ok_status();
}

Sampler::Sampler(const SamplingParams& params, uint64_t seed, std::span<const int32_t> prompt)
    : params_(params), rng_(params.seed.value_or(seed)) {
  if (params_.repetition_penalty != 1.0f)
    for (int32_t t : prompt) seen_[t] = 1;
}

void Sampler::accept(int32_t token) {
  ++output_counts_[token];
  if (params_.repetition_penalty != 1.0f) seen_[token] = 1;
}

void Sampler::apply_penalties(std::vector<float>& l) const {
  const float rp = params_.repetition_penalty;
  if (rp != 1.0f) {
    for (const auto& [t, _] : seen_) l[t] = l[t] > 0 ? l[t] / rp : l[t] * rp;
  }
  if (params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f) {
    for (const auto& [t, count] : output_counts_) {
      l[t] -= params_.presence_penalty + params_.frequency_penalty * static_cast<float>(count);
    }
  }
  for (const auto& [t, bias] : params_.logit_bias) {
    if (t < static_cast<int32_t>(l.size())) l[static_cast<size_t>(t)] += bias;
  }
}

int32_t Sampler::sample(const float* logits, int n_vocab) {
  const bool penalized = params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                         params_.frequency_penalty != 0.0f || !params_.logit_bias.empty();
  // Greedy without penalties reads the logits in place.
  if (params_.greedy() && !penalized) return first_max_index(logits, n_vocab);
  scratch_.assign(logits, logits + n_vocab);
  apply_penalties(scratch_);
  if (params_.greedy()) {
    // First maximum: ties go to the lowest id, as every reference does.
    return static_cast<int32_t>(std::max_element(scratch_.begin(), scratch_.end()) - scratch_.begin());
  }
  const float inv_t = 1.0f / params_.temperature;
  candidates_.clear();
  // Tokens a grammar masked out (-infinity) can never be drawn: leave them out.
  for (int i = 0; i < n_vocab; ++i) {
    if (scratch_[i] != -std::numeric_limits<float>::infinity()) candidates_.emplace_back(scratch_[i] * inv_t, i);
  }
  if (candidates_.empty()) return static_cast<int32_t>(std::max_element(scratch_.begin(), scratch_.end()) - scratch_.begin());
  auto by_logit = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  size_t n = candidates_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
    n = static_cast<size_t>(params_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<ptrdiff_t>(n), candidates_.end(), by_logit);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
  }
  // Softmax over the kept candidates (sorted, so [0] is the max).
  const float max = candidates_[0].first;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += (candidates_[i].first = std::exp(candidates_[i].first - max));
  for (size_t i = 0; i < n; ++i) candidates_[i].first = static_cast<float>(candidates_[i].first / sum);
  if (params_.top_p < 1.0f) {
    double cum = 0.0;
    size_t keep = 0;
    while (keep < n) {
      cum += candidates_[keep].first;
      ++keep;
      if (cum >= params_.top_p) break;
    }
    n = keep;
  }
  if (params_.min_p > 0.0f) {
    const float cutoff = params_.min_p * candidates_[0].first;
    size_t keep = 1;
    while (keep < n && candidates_[keep].first >= cutoff) ++keep;
    n = keep;
  }
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += candidates_[i].first;
  const double r = rng_.uniform() * total;
  double acc = 0.0;
  for (size_t i = 0; i < n; ++i) {
    acc += candidates_[i].first;
    if (r < acc) return candidates_[i].second;
  }
  return candidates_[n - 1].second;
}

namespace {
double log_sum_exp(const float* logits, int n) {
  const float max = *std::max_element(logits, logits + n);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  return max + std::log(sum);
}
}  // namespace

TokenLogprob Sampler::logprob_of(const float* logits, int n_vocab, int32_t token) {
  return {token, static_cast<float>(logits[token] - log_sum_exp(logits, n_vocab))};
}

std::vector<TokenLogprob> Sampler::top_logprobs(const float* logits, int n_vocab, int n) {
  const double lse = log_sum_exp(logits, n_vocab);
  std::vector<int32_t> ids(static_cast<size_t>(n_vocab));
  for (int i = 0; i < n_vocab; ++i) ids[i] = i;
  n = std::min(n, n_vocab);
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  std::vector<TokenLogprob> out;
  for (int i = 0; i < n; ++i) out.push_back({ids[i], static_cast<float>(logits[ids[i]] - lse)});
  return out;
}

double Sampler::entropy(const float* logits, int n_vocab) {
  const double lse = log_sum_exp(logits, n_vocab);
  double h = 0.0;
  for (int i = 0; i < n_vocab; ++i) {
    const double lp = static_cast<double>(logits[i]) - lse;
    if (lp > -700.0) h -= std::exp(lp) * lp;
  }
  return h;
}

}  // namespace llms
