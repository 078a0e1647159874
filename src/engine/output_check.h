// Checks of a finished output for the signs of a broken model or configuration,
// counted per kind in llmserve_abnormal_outputs_total (docs/operations.md says how to
// alert on them):
//   empty        no text at all
//   repetition   a repeated n-gram (n <= 16 tokens) covering most of an output of 16+
//   invalid_utf8 the model produced bytes that are not UTF-8 (shown as U+FFFD)
// A request that ends by max_tokens ("length") is not abnormal: clients set max_tokens
// on purpose. The deploy module's quality monitor adds one kind of its own,
// cross_perplexity (a candidate's output the stable version finds improbable).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "engine/finish_reason.h"

namespace llms {

struct OutputFacts {
  std::span<const int32_t> tokens;  // generated tokens
  std::string_view text;            // the text the client received
  FinishReason finish = FinishReason::kStop;
  bool ignore_eos = false;
};

// The kinds that apply (none for a normal output). Only stop/length finishes are
// judged: a cancelled or timed-out output is cut short by the client or the clock.
std::vector<const char*> abnormal_output_kinds(const OutputFacts& out);

// The share of `tokens` covered by the longest run that repeats with a period of at
// most `max_period` tokens (the period's first occurrence included); 0 when nothing
// repeats.
double repeated_share(std::span<const int32_t> tokens, int max_period = 16);

}  // namespace llms
