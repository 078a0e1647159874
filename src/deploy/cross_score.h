// Cross-scoring: one finished request's text (prompt + output) run teacher-forced
// through the model that wrote it and through another version's model, compared at
// the output's positions only — how probable the other model finds what this one
// wrote, and how far apart the two distributions are there.
//
// Thread-safety: a function of its arguments; runs the models on the caller's pool
// (the models are immutable; each run has its own KV cache).
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "base/thread_pool.h"
#include "eval/perplexity.h"

namespace llms {

struct CrossScore {
  double nll_other = 0;  // mean NLL per output token under the other model (nats)
  double nll_self = 0;   // the same under the model that wrote it
  double kl = 0;         // mean KL(self || other) over the output positions (nats)
  int64_t tokens = 0;    // output tokens scored
};

// `tokens`: prompt then output, the output starting at `prompt_len` (>= 1). A text
// longer than the models' training context keeps its end (a shorter prompt).
Result<CrossScore> cross_score(std::span<const int32_t> tokens, int64_t prompt_len, const EvalSide& self,
                               const EvalSide& other, ThreadPool& pool);

}  // namespace llms
