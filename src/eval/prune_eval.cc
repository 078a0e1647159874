#include "eval/prune_eval.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "eval/perplexity.h"
#include "model/model.h"

namespace llms {

Result<PruneEvalResult> evaluate_pruning(const std::string& model_path, std::span<const int32_t> tokens,
                                         const PruneEvalOptions& o, ThreadPool& pool) {
  if (o.sparsities.empty()) return invalid_argument("give at least one sparsity level");
  LLMS_ASSIGN_OR_RETURN(std::unique_ptr<Model> base, Model::load(model_path));
  std::error_code ec;
  const std::filesystem::path dir = o.temp_dir.empty() ? std::filesystem::temp_directory_path(ec) : std::filesystem::path(o.temp_dir);
  if (ec) return internal_error("no temporary directory: " + ec.message());
  PruneEvalResult result;
  for (size_t i = 0; i < o.sparsities.size(); ++i) {
    const std::string path = (dir / fmt::format("llmserve-eval-prune-{}-{}.gguf", getpid(), i)).string();
    PruneOptions p;
    p.sparsity = o.sparsities[i];
    p.pattern = o.pattern;
    p.schedule = o.schedule;
    p.threads = pool.num_threads();
    Result<PruneReport> report = prune_model(model_path, path, p);
    if (!report.ok()) return report.status();
    Result<std::unique_ptr<Model>> pruned = Model::load(path);
    std::filesystem::remove(path, ec);  // the mapping keeps the data until the model goes
    if (!pruned.ok()) return pruned.status();
    LLMS_ASSIGN_OR_RETURN(PerplexityResult r, evaluate_perplexity(tokens, {pruned->get()}, {base.get()}, {o.ctx, 0}, pool));
    PruneEvalRow row;
    row.sparsity = o.sparsities[i];
    row.pruned_share = static_cast<double>(report->zero_elements) / static_cast<double>(report->pruned_elements);
    row.model_share = static_cast<double>(report->zero_elements) / static_cast<double>(report->total_elements);
    row.perplexity = r.perplexity;
    row.kl_divergence = r.kl_divergence;
    row.top1_agreement = r.top1_agreement;
    result.base_perplexity = r.base_perplexity;
    result.scored_tokens = r.scored_tokens;
    result.rows.push_back(row);
  }
  return result;
}

}  // namespace llms
