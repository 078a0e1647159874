// `llmserve bench-speculative`: single-stream decode with speculative decoding against
// plain decoding, interleaved in one run on the same model and prompt. The proposer is
// chosen for what is measured: a replay of the target's own greedy output with a set
// share of corrupted tokens (acceptance under control: the mechanism's speedup at a
// given acceptance, on any weights), prompt lookup, or a draft model.
//
// Thread-safety: runs engines on the calling thread.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "engine/engine_config.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace llms {

struct SpecBenchOptions {
  int prompt_tokens = 32;
  int output_tokens = 128;
  int spec_tokens = 4;
  std::string proposer = "replay";  // replay, ngram, draft
  double corrupt = 0.1;             // replay: share of proposed tokens made wrong
  std::string draft_model;          // draft
  int rounds = 3;                   // plain and speculative runs, alternated
  int threads = 0;
};

struct SpecBenchResult {
  double plain_tok_s = 0;        // best round
  double spec_tok_s = 0;
  double speedup = 0;
  double acceptance = 0;         // accepted / proposed tokens
  double tokens_per_pass = 0;    // generated tokens per target forward pass
  bool identical = false;        // the speculative output equals the plain one
};

Result<SpecBenchResult> run_spec_benchmark(const Model& model, const Tokenizer& tokenizer, const SpecBenchOptions& o);

}  // namespace llms
