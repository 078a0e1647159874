// Which requests run with confidence early exit (model/early_exit.h), and what that
// changes for the engine around them. Early exit changes a request's output (below a
// threshold of 1), so:
//  - only requests whose token is the argmax of the logits take part: greedy
//    (temperature 0), with no grammar, penalty or logit bias that could pick another
//    token than the one the exit check was confident about; each may opt out
//    (RequestParams::early_exit). Everything else runs full depth, as before;
//  - only generated positions may exit: the prompt runs full depth, so its KV blocks
//    are exact and shared through the prefix cache as any other; the blocks past the
//    prompt hold filled (approximate) keys and are never committed there;
//  - a preempted sequence recomputes its generated positions with the same exit
//    checks, which make the same decisions, so it continues as it would have;
//  - its result-cache key carries the exit settings.
// Thread-safety: plain functions of their arguments.
#pragma once

#include "base/hash.h"
#include "engine/engine_config.h"
#include "engine/request.h"
#include "model/early_exit.h"

namespace llms {

// True when `params` runs with early exit on an engine with `config`.
bool early_exit_applies(const EngineConfig& config, const RequestParams& params);

// The identity that keys an early-exit request's cached result: the model's, mixed
// with the exit layers and threshold.
Hash128 early_exit_identity(const Hash128& model_identity, const EngineConfig& config);

}  // namespace llms
