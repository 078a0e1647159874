// `llmserve eval-precision`: what automatic precision (serving/precision_policy.h,
// serving/precision_router.h) buys and costs, against always serving the cheapest
// variant and always serving the most precise one.
//
// The workload is cut from a text: requests alternate between short prompts and long
// ones, each followed by `gen` tokens of the text's own continuation.
//
// Quality (teacher forcing): every continuation position is scored by the variant that
// serves it under each mode; for auto, the estimator picks the first variant from the
// prompt length and `gen` (as max_tokens), and the entropy watch moves the request up
// exactly as the router does (the position that tips the mean is scored by the next
// variant). Against the most precise variant at the same position: mean KL(best ||
// served) in nats, top-1 agreement; and perplexity of the continuation, with its ratio
// to always-best. Per request and over all.
//
// Cost: weight bytes read per generated token — every token a variant processes
// (prompt, emitted, the recomputed prefix after a fallback) times its weights' bytes
// per token, summed, over the tokens generated — and measured tok/s: the workload
// served through a PrecisionRouter on real engines (greedy, `gen` tokens each, all
// requests at once), the modes interleaved round by round.
//
// Memory: every variant's weights (all resident at once).
//
// Thread-safety: one call at a time.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "serving/precision_policy.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace llms {

struct PrecisionEvalVariant {
  std::string name;
  const Model* model = nullptr;
};

struct PrecisionEvalOptions {
  PrecisionPolicy policy;               // its entropy bound is replaced by each of `entropy_bounds`
  std::vector<double> entropy_bounds;   // one auto row per bound (0: no fallback)
  int requests = 32;                    // half short, half long
  int short_prompt = 8;
  int long_prompt = 96;
  int gen = 32;                         // continuation tokens per request
  int rounds = 3;                       // speed: rounds of every mode, interleaved; 0: no speed runs
  int threads = 1;
};

struct PrecisionRequestRow {
  int prompt_tokens = 0;
  int first_variant = 0;       // auto's choice
  int last_variant = 0;        // where it ended
  int fallback_at = -1;        // continuation index of the first fallback; -1: none
  double kl = 0, top1 = 0, ppl = 0, ppl_ratio = 0;
};

struct PrecisionModeRow {
  std::string mode;                    // "cheapest (q4_k)", "best (f16)", "auto (entropy 1.5)"
  double entropy_bound = -1;           // auto rows
  double kl = 0;                       // mean KL(best || served), nats per position
  double top1 = 0;                     // served top-1 == best's
  double ppl = 0;
  double ppl_ratio = 0;                // / always-best's
  double bytes_per_token = 0;          // weight bytes read per generated token
  double cost_ratio = 0;               // / always-best's
  std::vector<int64_t> first_variant;  // requests started on each variant
  int64_t fallbacks = 0;
  double tok_s = 0;                    // median over rounds (0 without speed runs)
  std::vector<PrecisionRequestRow> requests;
};

struct PrecisionEvalResult {
  std::vector<std::string> variants;
  std::vector<int64_t> weight_bytes;   // per variant, resident
  std::vector<int64_t> bytes_per_token;
  int64_t scored_positions = 0;
  std::vector<PrecisionModeRow> rows;  // cheapest, best, then one auto row per bound
};

// INVALID_ARGUMENT for bad options or a text too short for the workload.
Result<PrecisionEvalResult> evaluate_precision(std::span<const PrecisionEvalVariant> variants,
                                               const Tokenizer& tokenizer, std::span<const int32_t> text,
                                               const PrecisionEvalOptions& options);

}  // namespace llms
