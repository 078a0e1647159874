#include "engine/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "kernels/ops.h"

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

namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();  // a grammar's: never drawn

// Order of logit, ties to the lower id.
bool by_logit(const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

// A positive float's exponent and first two mantissa bits (coarse), or twelve (fine):
// larger keys, larger values.
uint32_t coarse_key(float e) { return std::bit_cast<uint32_t>(e) >> 21; }
uint32_t fine_key(float e) { return std::bit_cast<uint32_t>(e) >> 11; }
constexpr size_t kKeys = size_t{1} << 10;  // coarse keys, and fine keys within one

}  // namespace

// The last token top-p keeps, in order of logit, found without sorting the vocabulary:
// the exponentials' mass by coarse key (a quarter of an octave each, from the top)
// gives the key where the kept mass reaches top_p, their mass by fine key within it
// the fine key; only that fine key's tokens are sorted.
Sampler::NucleusBound Sampler::nucleus_bound(const float* l, int n_vocab, float inv_t, double sum) {
  NucleusBound keep_all{0, {kMasked, std::numeric_limits<int32_t>::max()}};
  if (params_.top_p >= 1.0f) return keep_all;
  const double target = params_.top_p * sum;
  double cum = 0.0;  // of the tokens above the key found so far
  // The highest key of `mass_` at which cum reaches target, or -1.
  auto find = [&] {
    size_t key = kKeys;
    while (key > 0 && cum + mass_[key - 1] < target) cum += mass_[--key];
    return static_cast<int64_t>(key) - 1;
  };
  mass_.assign(kKeys, 0.0);
  for (int i = 0; i < n_vocab; ++i) {
    if (l[i] != kMasked) mass_[coarse_key(probs_[i])] += probs_[i];
  }
  const int64_t coarse = find();
  if (coarse < 0) return keep_all;
  mass_.assign(kKeys, 0.0);
  for (int i = 0; i < n_vocab; ++i) {
    if (l[i] != kMasked && coarse_key(probs_[i]) == coarse) mass_[fine_key(probs_[i]) % kKeys] += probs_[i];
  }
  int64_t fine = find();
  // Rounding left the target above this key's whole mass: all of it is kept, down to
  // its lowest fine key.
  while (fine < 0 || mass_[static_cast<size_t>(fine)] == 0.0) ++fine;
  const uint32_t key = static_cast<uint32_t>(coarse * static_cast<int64_t>(kKeys) + fine);
  candidates_.clear();
  for (int i = 0; i < n_vocab; ++i) {
    if (l[i] != kMasked && fine_key(probs_[i]) == key) candidates_.emplace_back(l[i] * inv_t, i);
  }
  std::sort(candidates_.begin(), candidates_.end(), by_logit);
  for (const auto& c : candidates_) {
    cum += probs_[static_cast<size_t>(c.second)];
    if (cum >= target) return {key, c};
  }
  return {key, candidates_.back()};
}

int32_t Sampler::sample(const float* logits, int n_vocab) {
  const bool penalized = params_.repetition_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                         params_.frequency_penalty != 0.0f || !params_.logit_bias.empty();
  // Without penalties the logits are read in place.
  const float* l = logits;
  if (penalized) {
    scratch_.assign(logits, logits + n_vocab);
    apply_penalties(scratch_);
    l = scratch_.data();
  }
  // First maximum: ties go to the lowest id, as every reference does.
  if (params_.greedy()) return first_max_index(l, n_vocab);
  const float inv_t = 1.0f / params_.temperature;
  const bool top_k = params_.top_k > 0 && params_.top_k < n_vocab;
  // Without top-k, the draw walks the tokens in id order over those that top-p and
  // min-p keep: the same distribution as walking them in order of logit, without
  // sorting the vocabulary per token (2.4 ms at 32,000 tokens, more than the model's
  // step).
  if (!top_k) {
    // Exponentials of the scaled logits from their maximum (whose own is 1).
    probs_.resize(static_cast<size_t>(n_vocab));
    for (int i = 0; i < n_vocab; ++i) probs_[i] = l[i] * inv_t;
    float max = 0.0f;
    softmax_step(probs_.data(), n_vocab, kMasked, &max);
    if (max == kMasked) return 0;  // every token masked: the first maximum
    double sum = 0.0;  // probabilities are e / sum
    for (int i = 0; i < n_vocab; ++i) sum += l[i] == kMasked ? 0.0 : probs_[i];
    const NucleusBound bound = nucleus_bound(l, n_vocab, inv_t, sum);
    // Min-p keeps probabilities of at least min_p times the top one's (whose e is 1).
    const float min_e = params_.min_p;
    auto kept = [&](int i) {
      if (l[i] == kMasked || probs_[i] < min_e) return false;
      const uint32_t key = fine_key(probs_[i]);
      if (key != bound.key) return key > bound.key;
      const std::pair<float, int32_t> c(l[i] * inv_t, i);
      return c == bound.last || by_logit(c, bound.last);
    };
    // The kept tokens' exponentials in place, the others' 0.
    double total = 0.0;
    for (int i = 0; i < n_vocab; ++i) total += probs_[i] = kept(i) ? probs_[i] : 0.0f;
    const double r = rng_.uniform() * total;
    double acc = 0.0;
    int32_t last = 0;
    for (int i = 0; i < n_vocab; ++i) {
      if (probs_[i] == 0.0f) continue;
      acc += probs_[i];
      last = i;
      if (r < acc) return i;
    }
    return last;
  }
  // Top-k: its k candidates in order of logit, then top-p and min-p among them.
  candidates_.clear();
  for (int i = 0; i < n_vocab; ++i) {
    if (l[i] != kMasked) candidates_.emplace_back(l[i] * inv_t, i);
  }
  if (candidates_.empty()) return 0;  // every token masked: the first maximum
  size_t n = std::min(candidates_.size(), static_cast<size_t>(params_.top_k));
  std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<ptrdiff_t>(n), candidates_.end(), by_logit);
  auto e = [&](size_t i) { return std::exp(static_cast<double>(candidates_[i].first) - candidates_[0].first); };
  double sum = 0.0;  // probabilities are e / sum
  for (size_t i = 0; i < n; ++i) sum += e(i);
  if (params_.top_p < 1.0f) {
    double cum = 0.0;
    size_t keep = 0;
    while (keep < n) {
      cum += e(keep) / sum;
      ++keep;
      if (cum >= params_.top_p) break;
    }
    n = keep;
  }
  if (params_.min_p > 0.0f) {
    const double cutoff = params_.min_p * (e(0) / sum);
    size_t keep = 1;
    while (keep < n && e(keep) / sum >= cutoff) ++keep;
    n = keep;
  }
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) total += e(i);
  const double r = rng_.uniform() * total;
  double acc = 0.0;
  for (size_t i = 0; i < n; ++i) {
    acc += e(i);
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
