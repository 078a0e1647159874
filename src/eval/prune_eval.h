// `llmserve eval-prune`: what magnitude pruning without fine-tuning costs in quality.
// For each sparsity level the model is pruned (tools/pruner.h) into a temporary file,
// loaded, and measured on a text against the unpruned model: perplexity, mean
// KL(unpruned || pruned) and top-1 agreement (eval/perplexity.h). The seeds'
// gradual sparsification fine-tunes between pruning steps; that needs training, which
// llmserve does not do, so these are one-shot numbers.
//
// Thread-safety: one call at a time per pool.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "tools/pruner.h"

namespace llms {

struct PruneEvalOptions {
  std::vector<double> sparsities;  // each in [0, 1); 2:4 takes only 0.5
  PruneSpec pattern;
  SparsitySchedule schedule = SparsitySchedule::kUniform;
  int ctx = 128;                   // perplexity window
  std::string temp_dir;            // where pruned files are written and removed (empty: the system's)
};

struct PruneEvalRow {
  double sparsity = 0;        // requested
  double pruned_share = 0;    // zeros among the pruned matrices' weights
  double model_share = 0;     // zeros among all the model's weights
  double perplexity = 0;
  double kl_divergence = 0;   // nats/token, unpruned || pruned
  double top1_agreement = 0;
};

struct PruneEvalResult {
  double base_perplexity = 0;
  int64_t scored_tokens = 0;
  std::vector<PruneEvalRow> rows;
};

Result<PruneEvalResult> evaluate_pruning(const std::string& model_path, std::span<const int32_t> tokens,
                                         const PruneEvalOptions& options, ThreadPool& pool);

}  // namespace llms
