// llmserve eval-prune -m MODEL -f TEXT --sparsities 0.1,0.2,... --pattern P [--schedule S] [--ctx N] [--json]
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "eval/prune_eval.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/load_tokenizer.h"

namespace llms::cli {
namespace {

struct Options {
  std::string model, text_file;
  std::vector<double> sparsities;
  std::string pattern = "unstructured";
  std::string schedule = "uniform";
  int ctx = 128;
  int threads = 0;
  bool json = false;
};

void run(const Options& o) {
  PruneEvalOptions e;
  e.pattern = value_or_fail(parse_prune_pattern(o.pattern));
  e.schedule = value_or_fail(parse_sparsity_schedule(o.schedule));
  e.sparsities = o.sparsities;
  if (e.sparsities.empty()) {
    if (e.pattern.pattern != PrunePattern::kTwoFour) fail(invalid_argument("--sparsities is required (e.g. 0.1,0.2,0.3)"));
    e.sparsities = {0.5};
  }
  e.ctx = o.ctx;
  std::vector<int32_t> tokens;
  {
    auto tokenizer = value_or_fail(load_tokenizer(o.model));
    tokens = tokenizer->encode(value_or_fail(read_file(o.text_file)));
  }
  ThreadPool pool(o.threads);
  const PruneEvalResult r = value_or_fail(evaluate_pruning(o.model, tokens, e, pool));
  if (o.json) {
    nlohmann::json j = {{"pattern", o.pattern}, {"schedule", o.schedule}, {"ctx", o.ctx},
                        {"tokens", r.scored_tokens}, {"base_perplexity", r.base_perplexity},
                        {"levels", nlohmann::json::array()}};
    for (const auto& row : r.rows) {
      j["levels"].push_back({{"sparsity", row.sparsity}, {"pruned_share", row.pruned_share},
                             {"model_share", row.model_share}, {"perplexity", row.perplexity},
                             {"kl_divergence", row.kl_divergence}, {"top1_agreement", row.top1_agreement}});
    }
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  std::printf("pattern %s, %s schedule, %lld scored tokens (windows of %d), no fine-tuning\n", o.pattern.c_str(),
              o.schedule.c_str(), static_cast<long long>(r.scored_tokens), o.ctx);
  std::printf("unpruned perplexity %.4f\n", r.base_perplexity);
  std::printf("| sparsity | zeros (pruned matrices) | zeros (model) | perplexity | ppl ratio | KL (nats/token) | top-1 agreement |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const auto& row : r.rows) {
    std::printf("| %.2f | %.2f%% | %.2f%% | %.4f | %.3f | %.5f | %.2f%% |\n", row.sparsity, 100 * row.pruned_share,
                100 * row.model_share, row.perplexity, row.perplexity / r.base_perplexity, row.kl_divergence,
                100 * row.top1_agreement);
  }
}

}  // namespace

void add_eval_prune_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("eval-prune", "Perplexity, KL and top-1 agreement of a model pruned at several sparsities");
  cmd->add_option("-m,--model", o->model, "GGUF model")->required();
  cmd->add_option("-f,--file", o->text_file, "Text file")->required();
  cmd->add_option("--sparsities", o->sparsities, "Comma-separated sparsity levels in [0, 1)")->delimiter(',');
  cmd->add_option("--pattern", o->pattern, "unstructured, 2:4 or block:N")->capture_default_str();
  cmd->add_option("--schedule", o->schedule, "uniform or depth")->capture_default_str();
  cmd->add_option("--ctx", o->ctx, "Window length in tokens")->capture_default_str();
  add_threads_flag(cmd, &o->threads);
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] { run(*o); });
}

}  // namespace llms::cli
