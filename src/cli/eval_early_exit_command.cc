// llmserve eval-early-exit -m MODEL -f TEXT --thresholds 1.0,0.9,... [--exit-layers L1,L2] [--ctx N]
//   [--decode-prompts P] [--prompt-tokens N] [--decode-tokens N] [-t THREADS] [--json]
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "eval/early_exit_eval.h"
#include "model/early_exit.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/load_tokenizer.h"

namespace llms::cli {
namespace {

struct Options {
  std::string model, text_file, thresholds, layers;
  EarlyExitEvalOptions eval;
  bool json = false;
};

void print_tables(const EarlyExitEvalResult& r, const EarlyExitEvalOptions& e) {
  std::printf("%lld positions (windows of %d, every position may exit), %d layers; decode: %d prompts of %d tokens, "
              "%d tokens each, %d thread(s)\n\n",
              static_cast<long long>(r.positions), e.ctx, r.n_layer, e.decode_prompts, e.prompt_tokens,
              e.decode_tokens, e.threads);
  std::printf("Logit lens (the final norm and head on the hidden state after each layer):\n\n");
  std::printf("| after layer | top-1 = final top-1 | mean top p | p >= 0.9 | of those, = final | p == 1.0f (wrong) |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const auto& l : r.lens) {
    std::printf("| %d | %.2f%% | %.3f | %.2f%% | %.2f%% | %lld (%lld) |\n", l.layer, 100 * l.top1_agreement,
                l.mean_top_p, 100 * l.confident_share, 100 * l.confident_agreement, static_cast<long long>(l.certain),
                static_cast<long long>(l.certain_wrong));
  }
  std::printf("\n| threshold |");
  for (int l : r.layers) std::printf(" exit @%d |", l);
  std::printf(" full depth | mean layers | top-1 agreement | KL (nats) | decode tok/s (exit / full) | speedup | decode "
              "exits | decode match |\n|---|");
  for (size_t i = 0; i < r.layers.size(); ++i) std::printf("---|");
  std::printf("---|---|---|---|---|---|---|---|\n");
  for (const auto& row : r.rows) {
    std::printf("| %g |", row.threshold);
    for (double s : row.exit_share) std::printf(" %.1f%% |", 100 * s);
    std::printf(" %.1f%% | %.2f | %.2f%% | %.4f | %.0f / %.0f | %.2fx | %.1f%% | %.1f%% |\n", 100 * row.full_share,
                row.mean_layers, 100 * row.top1_agreement, row.kl, row.exit_tok_s, row.full_tok_s, row.speedup,
                100 * row.decode_exit_share, 100 * row.decode_match);
  }
}

void run(Options& o) {
  o.eval.thresholds = value_or_fail(parse_exit_thresholds(o.thresholds));
  if (!o.layers.empty()) o.eval.layers = value_or_fail(parse_exit_layers(o.layers));
  auto model = value_or_fail(Model::load(o.model));
  const auto tokenizer = value_or_fail(load_tokenizer(model->file()));
  const std::vector<int32_t> tokens = tokenizer->encode(value_or_fail(read_file(o.text_file)));
  const EarlyExitEvalResult r = value_or_fail(evaluate_early_exit(*model, tokens, o.eval));
  if (!o.json) {
    print_tables(r, o.eval);
    return;
  }
  nlohmann::json j = {{"positions", r.positions}, {"n_layer", r.n_layer}, {"exit_layers", r.layers},
                      {"ctx", o.eval.ctx}, {"threads", o.eval.threads}, {"lens", nlohmann::json::array()},
                      {"thresholds", nlohmann::json::array()}};
  for (const auto& l : r.lens) {
    j["lens"].push_back({{"layer", l.layer}, {"top1_agreement", l.top1_agreement}, {"mean_top_p", l.mean_top_p},
                         {"confident_share", l.confident_share}, {"confident_agreement", l.confident_agreement},
                         {"certain", l.certain}, {"certain_wrong", l.certain_wrong}});
  }
  for (const auto& row : r.rows) {
    j["thresholds"].push_back({{"threshold", row.threshold}, {"exit_share", row.exit_share},
                               {"full_share", row.full_share}, {"mean_layers", row.mean_layers},
                               {"top1_agreement", row.top1_agreement}, {"kl", row.kl},
                               {"exit_tok_s", row.exit_tok_s}, {"full_tok_s", row.full_tok_s},
                               {"speedup", row.speedup}, {"decode_exit_share", row.decode_exit_share},
                               {"decode_match", row.decode_match}});
  }
  std::printf("%s\n", j.dump(1).c_str());
}

}  // namespace

void add_eval_early_exit_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "eval-early-exit", "Confidence early exit: the logit lens per layer; per threshold, exits per layer, agreement and "
                         "KL with full depth, and decode speed against full depth in the same run");
  cmd->add_option("-m,--model", o->model, "GGUF model")->required();
  cmd->add_option("-f,--file", o->text_file, "Text file")->required();
  auto* thresholds = cmd->add_option("--thresholds", o->thresholds, "Comma-separated thresholds in (0, 1] (1 = never exit)");
  cmd->add_option("--threshold", o->thresholds, "One threshold (as --thresholds)")->excludes(thresholds);
  cmd->add_option("--exit-layers", o->layers, "Comma-separated exit layers (default: every layer but the last)");
  cmd->add_option("--ctx", o->eval.ctx, "Window length in tokens")->capture_default_str();
  cmd->add_option("--decode-prompts", o->eval.decode_prompts, "Prompts timed for decode speed (0: none)")
      ->capture_default_str();
  cmd->add_option("--prompt-tokens", o->eval.prompt_tokens, "Tokens of each decode prompt")->capture_default_str();
  cmd->add_option("--decode-tokens", o->eval.decode_tokens, "Tokens decoded per prompt")->capture_default_str();
  add_threads_flag(cmd, &o->eval.threads);
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] {
    if (o->thresholds.empty()) fail(invalid_argument("--thresholds is required (e.g. 1.0,0.99,0.95,0.9,0.8)"));
    run(*o);
  });
}

}  // namespace llms::cli
