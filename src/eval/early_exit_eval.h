// `llmserve eval-early-exit`: what confidence early exit (model/early_exit.h) gives
// and costs on a model with no trained exit heads.
//
// - The logit lens: at each layer, does the model's own final norm and head read the
//   hidden state usefully? Per layer, the share of positions whose top token there is
//   the final top token, the mean top probability, and how often it is right when it is
//   confident (top probability >= 0.9) or certain (exactly 1.0 in float).
// - Per threshold, on the text (windows of `ctx` tokens, every position allowed to
//   exit, each one's exit checks seeing the filled keys of the positions before it, as
//   in generation): the share of positions exiting at each exit layer, the mean
//   layers run, top-1 agreement of the emitted distribution with full depth and the
//   mean KL(full depth || emitted) in nats.
// - Per threshold, decode speed: greedy decoding of `decode_tokens` from prompts
//   taken from the text, timed one token per pass, early exit and full depth
//   alternating prompt by prompt in the same run; and how many of the generated tokens
//   match the full-depth run before the first difference. At threshold 1 nothing
//   exits but every check still runs: that row is the checks' cost.
//
// Thread-safety: one call at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "model/model.h"

namespace llms {

struct EarlyExitEvalOptions {
  std::vector<int> layers;         // exit points; empty: every layer 1..n_layer - 1
  std::vector<double> thresholds;  // each in (0, 1]
  int ctx = 128;                   // quality windows
  int decode_prompts = 8;          // speed: prompts, each the start of a window
  int prompt_tokens = 16;
  int decode_tokens = 64;
  int threads = 1;
};

struct LensRow {
  int layer = 0;               // blocks run before the head reads
  double top1_agreement = 0;   // top token there == final top token
  double mean_top_p = 0;
  double confident_share = 0;  // positions with top probability >= 0.9 there
  double confident_agreement = 0;  // of them, agreeing with the final top token
  int64_t certain = 0;         // positions with top probability exactly 1.0f there
  int64_t certain_wrong = 0;   // of them, disagreeing with the final top token
};

struct ThresholdRow {
  double threshold = 0;
  std::vector<double> exit_share;  // per exit point: share of positions exiting there
  double full_share = 0;           // share running every layer
  double mean_layers = 0;          // blocks run per position
  double top1_agreement = 0;       // emitted top-1 == full depth's
  double kl = 0;                   // mean KL(full || emitted), nats per position
  double exit_tok_s = 0;           // decode with early exit
  double full_tok_s = 0;           // full depth, interleaved
  double speedup = 0;
  double decode_exit_share = 0;    // share of decoded tokens that exited
  double decode_match = 0;         // generated tokens equal to full depth's before the first difference, share
};

struct EarlyExitEvalResult {
  int n_layer = 0;
  std::vector<int> layers;
  int64_t positions = 0;  // scored positions
  std::vector<LensRow> lens;
  std::vector<ThresholdRow> rows;
};

// INVALID_ARGUMENT for bad options (named as the command's flags) or a text too short.
Result<EarlyExitEvalResult> evaluate_early_exit(const Model& model, std::span<const int32_t> tokens,
                                                const EarlyExitEvalOptions& options);

}  // namespace llms
