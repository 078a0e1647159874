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
#include <vector>

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

// A model's log-probabilities at every scored position of a text, kept so that later
// runs can be compared with it without the model that made it (a deployed version
// against itself at deploy time). Holds positions x n_vocab floats: meant for gate
// texts of a few hundred tokens.
struct ReferenceLogprobs {
  std::vector<int32_t> tokens;
  int n_vocab = 0;
  int ctx = 0;
  int windows = 0;
  std::vector<float> logprobs;  // [scored position, n_vocab]
};

Result<ReferenceLogprobs> record_logprobs(std::span<const int32_t> tokens, const EvalSide& side,
                                          const PerplexityOptions& opts, ThreadPool& pool);
// The text of `ref` scored by `side`, with `ref` as the base (base_perplexity, KL,
// top-1 agreement against it).
Result<PerplexityResult> evaluate_against(const ReferenceLogprobs& ref, const EvalSide& side, ThreadPool& pool);

}  // namespace llms
