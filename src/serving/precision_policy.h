// Automatic precision: which of a model's precision variants (cheapest first, e.g.
// q4_k, q8_0, f16) serves a request, and when a request moves up one variant.
//
// The estimator's features are named and cheap:
//   * the prompt's length and the request's max_tokens: variant i (all but the most
//     precise) takes a request whose prompt is at most prompt_max[i] tokens and whose
//     max_tokens is at most max_tokens_max[i]; the first variant that takes it serves
//     it, and the most precise variant takes the rest;
//   * the serving variant's own entropy: the entropy (nats) of the distribution each
//     generated token is drawn from, the first one being that of the prefill's last
//     position. When the mean over the last `window` tokens exceeds `entropy_bound`,
//     the request moves up one variant (tiered fallback): the token that tipped the
//     mean is not emitted, and the next variant recomputes the prompt and what was
//     emitted so far, and continues from there.
//
// Thread-safety: plain values; EntropyWatch is one request's, used by one thread at a time.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"

namespace llms {

struct PrecisionPolicy {
  std::vector<int> prompt_max;      // per variant but the last
  std::vector<int> max_tokens_max;  // per variant but the last
  double entropy_bound = 0;         // nats; 0: no fallback
  int window = 4;                   // tokens the entropy mean is taken over

  // INVALID_ARGUMENT (naming the config key) unless the tables have one entry per
  // variant but the last, the limits are positive, and the bound and window are sane.
  Status validate(int n_variants) const;
};

// Automatic precision for a served model: the model held at each of `variants`' types,
// cheapest first, made at load by quantizing its file, each request routed by `policy`
// (precision_router.h). No variants: one engine on the file as it is. A setting of
// the serving layer, not of any one engine.
struct PrecisionConfig {
  std::vector<DType> variants;
  PrecisionPolicy policy;

  // The policy against the variants' count (nothing to check without variants).
  Status validate() const;
};

// The variant (0 = cheapest) the estimator picks for a request.
int choose_precision_variant(const PrecisionPolicy& policy, int64_t prompt_tokens, int64_t max_tokens, int n_variants);

// Parses "q4_k,q8_0,f16" (the variants' types, cheapest first).
Result<std::vector<DType>> parse_precision_variants(const std::string& text);

// Parses "32,128" (a per-variant limit list; each at least 1).
Result<std::vector<int>> parse_precision_limits(const std::string& text);

// The fallback trigger over one request's token entropies on one variant.
class EntropyWatch {
 public:
  EntropyWatch(double bound, int window) : bound_(bound), window_(window) {}
  // Takes the next token's entropy; true when the mean of the last `window` ones
  // (fewer at the start: the mean of those seen) is above the bound.
  bool push(double entropy);
  void reset() { recent_.clear(), sum_ = 0; }

 private:
  double bound_;
  int window_;
  std::deque<double> recent_;
  double sum_ = 0;
};

}  // namespace llms
