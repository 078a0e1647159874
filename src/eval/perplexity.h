// Quality measures of a model on a text: perplexity over windows of N tokens, and,
// against a base model (or the same model with another KV precision), the mean KL
// divergence of the distributions and the top-1 agreement — the numbers users trust
// to judge a quantization.
//
// Each window starts fresh (empty cache) and every position of it after the first is
// scored: log-probability of the next token given the window so far.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/model.h"

namespace llms {

struct EvalSide {
  const Model* model = nullptr;
  DType k_type = DType::kF32;
  DType v_type = DType::kF32;
};

struct PerplexityOptions {
  int ctx = 128;           // window length in tokens
  int max_windows = 0;     // 0: the whole text
};

struct PerplexityResult {
  double perplexity = 0;
  double base_perplexity = 0;   // with a base
  double kl_divergence = 0;     // mean KL(base || model) in nats, with a base
  double top1_agreement = 0;    // fraction of positions where the argmax agrees, with a base
  int64_t scored_tokens = 0;
  int windows = 0;
};

// `tokens` is the tokenized text; `base` may have a null model (no comparison).
Result<PerplexityResult> evaluate_perplexity(std::span<const int32_t> tokens, const EvalSide& model,
                                             const EvalSide& base, const PerplexityOptions& opts, ThreadPool& pool);

}  // namespace llms
