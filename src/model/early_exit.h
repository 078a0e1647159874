// Confidence early exit (as CALM, Schuster et al. 2022, but with no trained exit
// heads): after chosen layers the model's own final norm and output head read a
// token's hidden state; if the top probability reaches the threshold, that
// distribution is the token's output and the remaining layers are skipped for it.
//
// Later positions still attend to the skipped layers, so their keys and values are
// filled as CALM does: the exited hidden state h goes through each skipped layer's
// attn_norm and its K and V projections only (plus biases and RoPE on k) and is stored
// in the cache. Per exited token and skipped layer that costs the two projections
// (2 x kv_dim x n_embd multiply-adds) instead of the whole layer; each check costs
// the output head (n_vocab x n_embd) for every token still eligible.
//
// Which tokens may exit is the caller's choice, per chunk (early_exit_from): the
// engine lets greedy requests' generated positions exit and runs prompts at full
// depth. A chunk's token that exits is removed from the later layers' rows (the batch
// is compacted), so the pass's cost falls with every exit.
//
// Exactness: a threshold of 1.0 means "never exit" (defined so, not left to float
// rounding: a top probability rounds to 1.0f once the runner-up's logit is ~17 below,
// which says nothing about the full-depth answer). With no exit a pass gives logits
// bit-identical to Model::forward (tested), and tokens that do not exit get exactly
// what they get without early exit beside them.
//
// Thread-safety: as Model::forward (the ForwardState and KvCache belong to the caller).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/config.h"

namespace llms {

struct EarlyExitConfig {
  // The exit points, each the number of blocks run before the check (1..n_layer - 1),
  // strictly ascending.
  std::vector<int> layers;
  // A token exits when its top probability is >= threshold; in (0, 1], 1 = never.
  double threshold = 1.0;

  // True when tokens can exit at all.
  bool enabled() const { return !layers.empty() && threshold < 1.0; }
  // INVALID_ARGUMENT naming --exit-layers or --exit-threshold: a layer outside
  // 1..n_layer - 1 (n_layer < 0: any layer >= 1), unsorted or repeated layers, a
  // threshold outside (0, 1] or NaN.
  Status validate(int n_layer = -1) const;
};

// "2,4" (the --exit-layers flag) as {2, 4}; INVALID_ARGUMENT for anything else.
Result<std::vector<int>> parse_exit_layers(const std::string& text);
// "1.0,0.9" (eval's --thresholds); each checked as a threshold.
Result<std::vector<double>> parse_exit_thresholds(const std::string& text);

// What an early-exit pass decided, per token of the pass (ForwardState::set_exit_trace).
struct ExitTrace {
  // Per token: the blocks run for it (n_layer: all).
  std::vector<int32_t> exit_layer;
  // With `lens`: per token and exit point (token-major, one entry per configured
  // layer), what the head read at that point: its top token and top probability;
  // -1 and -1 where the token had already exited. A threshold of 1.0 with `lens`
  // reads every exit point of every eligible token and exits none: the logit lens.
  bool lens = false;
  std::vector<int32_t> lens_top;
  std::vector<float> lens_p;
};

// The top probability of a row of logits (softmax max, accumulated in double) and
// its first argmax: what the exit test reads.
struct HeadTop {
  int32_t token;
  float p;
};
HeadTop head_top(const float* logits, int64_t n_vocab);

}  // namespace llms
