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

std::optional<ParamError> SamplingParams::check(int vocab_size) const {
  // Messages as the API states its ranges (the server passes them on in its 400s).
  static_assert(kMaxTopK == 1048576, "the top_k message states the bound");
  auto out_of = [](const char* param, const char* range, double got) {
    return ParamError{param, fmt::format("'{}' must be in {}, got {}", param, range, got)};
  };
  if (!(temperature >= 0.0f && temperature <= 2.0f)) return out_of("temperature", "[0, 2]", temperature);
  if (top_k < 0 || top_k > kMaxTopK) return out_of("top_k", "[0, 1048576] (0: off)", top_k);
  if (!(top_p > 0.0f && top_p <= 1.0f)) return out_of("top_p", "(0, 1]", top_p);
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return out_of("min_p", "[0, 1]", min_p);
  if (!(repetition_penalty >= 0.01f && repetition_penalty <= 10.0f)) {
    return out_of("repetition_penalty", "[0.01, 10]", repetition_penalty);
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return out_of("presence_penalty", "[-2, 2]", presence_penalty);
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return out_of("frequency_penalty", "[-2, 2]", frequency_penalty);
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return ParamError{"logit_bias", fmt::format("logit_bias names the token id {}", id)};
    if (vocab_size > 0 && id >= vocab_size) {
      return ParamError{"logit_bias", fmt::format("logit_bias names token id {}, outside the vocabulary (0..{})", id,
                                                  vocab_size - 1)};
    }
    if (!(bias >= -100.0f && bias <= 100.0f)) {
      return ParamError{"logit_bias",
                        fmt::format("'logit_bias' values must be numbers in [-100, 100] (token {})", id)};
    }
  }
  return std::nullopt;
}

Status SamplingParams::validate() const {
  const std::optional<ParamError> e = check();
  return e ? invalid_argument(e->message) : ok_status();
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
// Tokens whose kept mass one entry of block_mass_ holds.
constexpr int kDrawBlock = 64;

// The sum of e[i0, i1) in double, in eight interleaved partial sums (no chain of
// additions through the whole range), added pairwise at the end.
double sum_in_lanes(const float* e, int i0, int i1) {
  double part[8] = {};
  int i = i0;
  for (; i + 8 <= i1; i += 8)
    for (int j = 0; j < 8; ++j) part[j] += e[i + j];
  for (int j = 0; i < i1; ++i, ++j) part[j] += e[i];
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

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
  // Masked tokens' exponentials are 0 here (sample() cleared them), so they add
  // nothing. Two interleaved tables, so that neighbours of the same key do not wait on
  // each other's sum.
  mass_.assign(2 * kKeys, 0.0);
  const float* e = probs_.data();
  int i = 0;
  for (; i + 2 <= n_vocab; i += 2) {
    mass_[coarse_key(e[i])] += e[i];
    mass_[kKeys + coarse_key(e[i + 1])] += e[i + 1];
  }
  if (i < n_vocab) mass_[coarse_key(e[i])] += e[i];
  for (size_t k = 0; k < kKeys; ++k) mass_[k] += mass_[kKeys + k];
  mass_.resize(kKeys);
  const int64_t coarse = find();
  if (coarse < 0) return keep_all;
  mass_.assign(kKeys, 0.0);
  // Every token adds to a fine key: its exponential if it lies in the coarse key,
  // else 0 (no branch on the data).
  for (int i = 0; i < n_vocab; ++i) {
    const uint32_t in_coarse = 0u - static_cast<uint32_t>(coarse_key(e[i]) == coarse);
    mass_[fine_key(e[i]) % kKeys] += std::bit_cast<float>(std::bit_cast<uint32_t>(e[i]) & in_coarse);
  }
  int64_t fine = find();
  // Rounding left the target above this key's whole mass: all of it is kept, down to
  // its lowest fine key.
  while (fine < 0 || mass_[static_cast<size_t>(fine)] == 0.0) ++fine;
  const uint32_t key = static_cast<uint32_t>(coarse * static_cast<int64_t>(kKeys) + fine);
  candidates_.clear();
  for (int i = 0; i < n_vocab; ++i) {
    if (fine_key(e[i]) == key && l[i] != kMasked) candidates_.emplace_back(l[i] * inv_t, i);
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
    // Exponentials of the scaled logits from their maximum (whose own is 1); a masked
    // token's is 0.
    probs_.resize(static_cast<size_t>(n_vocab));
    float* e = probs_.data();
    for (int i = 0; i < n_vocab; ++i) e[i] = l[i] * inv_t;
    float max = 0.0f;
    softmax_step(e, n_vocab, kMasked, &max);
    if (max == kMasked) return 0;  // every token masked: the first maximum
    for (int i = 0; i < n_vocab; ++i) e[i] = l[i] == kMasked ? 0.0f : e[i];
    const double sum = sum_in_lanes(e, 0, n_vocab);  // probabilities are e / sum
    const NucleusBound bound = nucleus_bound(l, n_vocab, inv_t, sum);
    // Min-p keeps probabilities of at least min_p times the top one's (whose e is 1);
    // top-p the fine keys above the bound's, and in its key the tokens up to its last.
    // The kept tokens' exponentials stay, the others become 0, and their mass is summed
    // by block of kDrawBlock tokens for the draw.
    const float min_e = params_.min_p;
    const uint32_t bound_key = bound.key;
    const bool top_p = bound.last.first != kMasked;  // else every token is kept (key >= 0)
    const int n_blocks = (n_vocab + kDrawBlock - 1) / kDrawBlock;
    block_mass_.resize(static_cast<size_t>(n_blocks));
    double total = 0.0;
    int last_block = 0;  // the last block with kept mass
    for (int b = 0; b < n_blocks; ++b) {
      const int i0 = b * kDrawBlock, i1 = std::min(n_vocab, i0 + kDrawBlock);
      // Without branches on the data: the bound's own key is kept here and settled
      // below, token by token, in the blocks that hold it.
      uint32_t at_bound = 0;
      for (int i = i0; i < i1; ++i) {
        const uint32_t key = fine_key(e[i]);
        const uint32_t keep = static_cast<uint32_t>(e[i] >= min_e) & static_cast<uint32_t>(key >= bound_key);
        at_bound |= static_cast<uint32_t>(key == bound_key);
        e[i] = std::bit_cast<float>(std::bit_cast<uint32_t>(e[i]) & (0u - keep));
      }
      if (at_bound != 0 && top_p) {
        for (int i = i0; i < i1; ++i) {
          if (e[i] == 0.0f || fine_key(e[i]) != bound_key) continue;
          const std::pair<float, int32_t> c(l[i] * inv_t, i);
          if (!(c == bound.last || by_logit(c, bound.last))) e[i] = 0.0f;
        }
      }
      const double mass = block_mass_[static_cast<size_t>(b)] = sum_in_lanes(e, i0, i1);
      total += mass;
      if (mass > 0.0) last_block = b;
    }
    // The draw: the block where r falls, then the token within it, in id order.
    const double r = rng_.uniform() * total;
    double acc = 0.0;
    int32_t last = 0;
    for (int b = 0; b < n_blocks; ++b) {
      const double mass = block_mass_[static_cast<size_t>(b)];
      if (mass == 0.0) continue;
      if (r >= acc + mass && b < last_block) {
        acc += mass;
        continue;
      }
      const int i0 = b * kDrawBlock, i1 = std::min(n_vocab, i0 + kDrawBlock);
      for (int i = i0; i < i1; ++i) {
        if (e[i] == 0.0f) continue;
        acc += e[i];
        last = i;
        if (r < acc) return i;
      }
    }
    return last;
  }
  // Top-k: its k candidates in order of logit, then top-p and min-p among them.
  // One pass keeps the best k so far in a heap whose top is the worst of them; in id
  // order, a later token displaces it only with a strictly larger logit (ties go to the
  // lower id). Few tokens get past that one comparison.
  candidates_.clear();
  const size_t k = static_cast<size_t>(params_.top_k);
  int i = 0;
  for (; i < n_vocab && candidates_.size() < k; ++i) {
    if (l[i] != kMasked) candidates_.emplace_back(l[i] * inv_t, i);
  }
  std::make_heap(candidates_.begin(), candidates_.end(), by_logit);
  for (; i < n_vocab; ++i) {
    const float x = l[i] * inv_t;
    if (x > candidates_.front().first) [[unlikely]] {
      std::pop_heap(candidates_.begin(), candidates_.end(), by_logit);
      candidates_.back() = {x, i};
      std::push_heap(candidates_.begin(), candidates_.end(), by_logit);
    }
  }
  if (candidates_.empty()) return 0;  // every token masked: the first maximum
  std::sort_heap(candidates_.begin(), candidates_.end(), by_logit);
  size_t n = candidates_.size();
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
