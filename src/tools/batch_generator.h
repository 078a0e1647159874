// BatchGenerator: runs a list of prompts to completion on the calling thread through
// an Engine in manual mode (continuous batching, at most `parallel` running at once).
// It is the driver of `llmserve generate`; the server drives the same Engine from its
// own thread.
//
// Thread-safety: one run() at a time; callbacks are called on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/engine_config.h"
#include "engine/finish_reason.h"
#include "engine/request.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace llms {

struct GenerationOutput {
  std::string text;
  std::vector<int32_t> tokens;  // generated ids (text-bearing ones; an end-of-generation token is not included)
  // Per generated token, when the request asked (RequestParams::top_logprobs >= 0): its
  // log-probability and the top alternatives'.
  std::vector<float> logprobs;
  std::vector<std::vector<TokenLogprob>> top_logprobs;
  FinishReason finish = FinishReason::kLength;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_prompt_tokens = 0;
};

struct GeneratorStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  int64_t prefill_tokens_computed = 0;  // prompt tokens run through the model
  int64_t prefix_cache_hit_tokens = 0;
  int64_t steps = 0;
  int64_t spec_draft_tokens = 0;     // speculative decoding: proposed and verified
  int64_t spec_accepted_tokens = 0;  // and accepted
  int64_t preemptions = 0;
  double first_token_s = 0;  // until the first token of the first prompt
  double total_s = 0;
  int32_t kv_blocks_total = 0;
  double kv_waste_pct = 0;
  double kv_shared_pct = 0;
};

class BatchGenerator {
 public:
  using TextCallback = std::function<void(size_t index, std::string_view text)>;

  // `config.batching.max_running` is the parallelism; a zero kv_cache_bytes sizes the cache for
  // `max_running` sequences of the longest prompt plus its max_tokens.
  BatchGenerator(const Model& model, const Tokenizer& tokenizer, EngineConfig config);

  // Runs every request (a zero timeout_s means no timeout) and returns their outputs
  // in order; `on_text` sees each piece of text as it is generated.
  Result<std::vector<GenerationOutput>> run(std::span<const RequestParams> requests, const TextCallback& on_text,
                                            GeneratorStats* stats);

 private:
  const Model& model_;
  const Tokenizer& tokenizer_;
  EngineConfig config_;
};

}  // namespace llms
