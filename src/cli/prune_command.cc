// llmserve prune IN.gguf OUT.gguf --sparsity S --pattern unstructured|2:4|block:N [--schedule uniform|depth]
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/config_flags.h"
#include "tools/pruner.h"

namespace llms::cli {
namespace {

struct Options {
  std::string in, out;
  double sparsity = 0;
  bool sparsity_given = false;
  std::string pattern = "unstructured";
  std::string schedule = "uniform";
  int threads = 0;
  bool json = false;
};

void run(const Options& o) {
  PruneOptions p;
  if (o.sparsity_given) p.sparsity = o.sparsity;
  p.pattern = value_or_fail(parse_prune_pattern(o.pattern));
  p.schedule = value_or_fail(parse_sparsity_schedule(o.schedule));
  p.threads = o.threads;
  const PruneReport r = value_or_fail(prune_model(o.in, o.out, p));
  const double pruned_share = static_cast<double>(r.zero_elements) / static_cast<double>(r.pruned_elements);
  const double model_share = static_cast<double>(r.zero_elements) / static_cast<double>(r.total_elements);
  if (o.json) {
    nlohmann::json j = {{"pattern", prune_pattern_name(p.pattern)}, {"schedule", o.schedule},
                        {"sparsity_pruned_tensors", pruned_share}, {"sparsity_model", model_share},
                        {"tensors", nlohmann::json::array()}};
    for (const auto& t : r.tensors) {
      j["tensors"].push_back({{"name", t.name}, {"type", dtype_name(t.type)}, {"layer", t.layer},
                              {"target", t.target}, {"achieved", t.achieved}, {"elements", t.elements}});
    }
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  std::printf("  %-28s %-6s %7s %9s\n", "tensor", "type", "target", "achieved");
  for (const auto& t : r.tensors) {
    std::printf("  %-28s %-6s %6.2f%% %8.2f%%\n", t.name.c_str(), std::string(dtype_name(t.type)).c_str(),
                100 * t.target, 100 * t.achieved);
  }
  std::printf("wrote %s: %s, %s schedule; %.2f%% of the pruned matrices' weights are zero, %.2f%% of the model's\n",
              o.out.c_str(), prune_pattern_name(p.pattern).c_str(), o.schedule.c_str(), 100 * pruned_share,
              100 * model_share);
}

}  // namespace

void add_prune_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("prune", "Zero the smallest-magnitude weights of every linear layer (magnitude pruning)");
  cmd->add_option("in", o->in, "Input GGUF")->required();
  cmd->add_option("out", o->out, "Output GGUF (written only if everything checks out)")->required();
  CLI::Option* sparsity =
      cmd->add_option("--sparsity", o->sparsity, "Share of each row's weights to zero, in [0, 1) (2:4: 0.5, may be left out)");
  cmd->add_option("--pattern", o->pattern, "unstructured, 2:4 or block:N (zero whole N-wide blocks of smallest L2 norm)")
      ->capture_default_str();
  cmd->add_option("--schedule", o->schedule, "uniform, or depth (sparsity rising with depth, averaging S)")
      ->capture_default_str();
  add_threads_flag(cmd, &o->threads);
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  cmd->callback([o, sparsity] {
    o->sparsity_given = sparsity->count() > 0;
    run(*o);
  });
}

}  // namespace llms::cli
