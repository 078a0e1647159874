// The quality gate a candidate version passes before any traffic reaches it: on a
// gate text, the candidate's next-token distributions are compared with those of the
// version serving now — mean KL divergence, top-1 agreement and the perplexity ratio —
// against thresholds (the server's, or the candidate's meta.toml).
//
// With --gate-reference, a candidate that passes is also scored on reference answers
// (deploy/task_gate.h) and refused below --gate-min-bleu, --gate-min-chrf or
// --gate-min-exact.
//
// The gate text is a file (--gate-text) or, by default, a sample the serving version
// writes at deploy time (temperature 1, a fixed seed), so the gate measures the
// candidate where the serving version puts its probability mass.
//
// Thread-safety: functions of their arguments; they run models on the caller's pool.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "deploy/serving_version.h"
#include "deploy/task_gate.h"

namespace llms {

struct GateConfig {
  std::string text_path;        // "" = a sample of the serving version
  int sample_tokens = 256;      // length of that sample
  double max_kl = 0.1;          // nats per token; meta.toml's gate_max_kl wins
  double min_top1 = 0.8;        // meta.toml's gate_min_top1 wins
  int ctx = 128;                // window of the comparison
  bool allow_tokenizer_change = false;
  TaskGateConfig task;          // task scores on reference answers (--gate-reference); off by default
};

// FAILED_PRECONDITION naming the first difference when the two tokenizers differ
// (vocabulary size, a token's text, or the special tokens).
Status check_same_tokenizer(const Tokenizer& serving, const Tokenizer& candidate);

// The gate text's tokens for `serving`: the file tokenized, or its own sample.
Result<std::vector<int32_t>> gate_tokens(ServingVersion& serving, const GateConfig& config);

// Compares `candidate` with `serving` on `tokens`; a failed comparison (passed false)
// says which threshold and by how much in `reason`.
Result<GateResult> run_gate(const ServingVersion& serving, const ServingVersion& candidate,
                            const std::vector<int32_t>& tokens, const GateConfig& config, ThreadPool& pool);
// The same against the serving version's log-probabilities recorded beforehand (for a
// swap in which the two versions are never loaded at once).
Result<GateResult> run_gate_against(const ReferenceLogprobs& serving_ref, const std::string& serving_name,
                                    const ServingVersion& candidate, const GateConfig& config, ThreadPool& pool);
// The verdict on a comparison's numbers, by the candidate's thresholds.
GateResult gate_verdict(const PerplexityResult& r, const ServingVersion& candidate, const GateConfig& config,
                        const std::string& against);

}  // namespace llms
