// llama.cpp's greedy reference files (tests/data/arch_ref_*.txt, lora_ref_*.txt, written
// by scripts/arch-reference.sh and scripts/lora-reference.sh) and the comparison of a
// model's steps with them, shared by the architecture and adapter tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace llms::test {

struct RefStep {
  int32_t greedy = -1;
  std::vector<std::pair<int32_t, double>> top;  // llama.cpp's top-k (id, log-probability)
};

struct RefPrompt {
  std::vector<int32_t> tokens;
  std::vector<RefStep> steps;
};

struct Reference {
  std::string make_model_args;
  std::string lora_args;  // make-model's adapter arguments (lora_ref files)
  int context = 0;  // llama-server's -c (LongRoPE picks its factors by it)
  std::vector<RefPrompt> prompts;
};

Reference read_reference(const std::string& path);

// log-softmax in double over one row of logits.
std::vector<double> log_probs(const float* logits, int64_t n);

struct Agreement {
  int greedy_mismatches = 0;  // steps whose greedy token differs, near ties excepted
  int near_ties = 0;          // differing steps where llama.cpp's own top two are within tie_margin
  double worst_logprob_diff = 0;
};

// Runs one prompt and its steps (with `adapter` on every token, if not null), feeding
// llama.cpp's greedy tokens (so that one mismatch does not hide the rest).
Agreement compare_prompt(const Model& m, const RefPrompt& p, int context, const Tokenizer& tok, double tie_margin,
                         const LoraAdapter* adapter = nullptr);

}  // namespace llms::test
