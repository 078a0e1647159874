// Sequence: the engine thread's state for one request — its tokens, how many of them
// the KV cache holds, its blocks, sampler, detokenizer and stop matcher, and its
// timestamps. Owned and touched only by the engine thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/request.h"
#include "engine/sampler.h"
#include "engine/stop_matcher.h"
#include "grammar/grammar_matcher.h"
#include "kv/kv_block_manager.h"
#include "tokenizer/streaming_decoder.h"

namespace llms {

struct Sequence {
  uint64_t id = 0;
  std::shared_ptr<RequestHandle> handle;
  RequestParams params;

  std::vector<int32_t> tokens;  // prompt, then generated tokens
  std::string text;             // the generated text sent so far (for the output checks)
  int64_t prompt_len = 0;
  int64_t computed = 0;         // positions whose K/V are in the cache
  int64_t cached_prompt_tokens = 0;
  SequenceBlocks blocks;
  bool running = false;         // in the running set (else waiting)
  bool long_job = false;        // in the long-job lane
  bool early_exit = false;         // its generated tokens may exit early (early_exit_policy.h)
  bool waited_for_prefix = false;  // held back while a running sequence computed its shared prefix
  int64_t cached_hint = 0;         // its prompt tokens in the prefix cache when the waiting queue was last ordered
  SloTarget slo;                   // the targets it is held to (slo.h)
  int64_t itl_intervals = 0;       // inter-token intervals measured against slo.itl_ms
  int64_t itl_over = 0;            // of them, longer than slo.itl_ms

  // With params.prompt_logprobs: entry p-1 scores prompt token p (filled as the prompt's
  // chunks are computed, again after a preemption).
  std::vector<TokenEvent> prompt_scores;
  // With params.pooling: the pooled hidden state so far [n_embd] (mean: the sum of the
  // rows computed; restarted with the prompt's first chunk, after a preemption too).
  std::vector<float> pooled;

  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<StreamingDecoder> decoder;
  std::unique_ptr<StopMatcher> stop;
  std::unique_ptr<GrammarMatcher> matcher;  // for constrained requests
  std::string client_error_code;            // set before finish(): FinishEvent::client_error_code

  int64_t arrival_ns = 0;
  int64_t deadline_ns = 0;
  int64_t first_scheduled_ns = 0;  // 0 until first scheduled
  int64_t started_ns = 0;          // when it last entered the running set
  int64_t first_token_ns = 0;
  int64_t last_token_ns = 0;
  double compute_s = 0;
  int preemptions = 0;

  // Speculative decoding: this step's proposed tokens, the chunk's input built from
  // them, how many to propose (adapted to the acceptance rate) and that rate.
  std::vector<int32_t> draft;
  std::vector<int32_t> verify_input;
  int spec_k = 0;
  double spec_acceptance = 0.5;

  int64_t generated() const { return static_cast<int64_t>(tokens.size()) - prompt_len; }
  // Positions still to compute before the next token can be sampled.
  int64_t pending() const { return static_cast<int64_t>(tokens.size()) - computed; }
  // The tokens whose KV blocks may go to the prefix cache: all computed ones, or with
  // early exit only the prompt's (the rest hold filled keys).
  std::span<const int32_t> committable() const {
    const int64_t n = early_exit ? std::min(computed, prompt_len) : computed;
    return std::span<const int32_t>(tokens).first(static_cast<size_t>(n));
  }
  // What the prefix cache is searched with when the sequence (re)starts.
  std::span<const int32_t> prefix_key() const {
    if (params.computes_whole_prompt()) return {};  // every prompt position must be computed
    return early_exit ? std::span<const int32_t>(tokens).first(static_cast<size_t>(prompt_len)) : tokens;
  }
  // Predicted cost in tokens, for the long-job lane.
  int64_t cost() const { return prompt_len + params.max_tokens; }
};

}  // namespace llms
