// llmserve eval-task -m MODEL --reference FILE.jsonl [--base MODEL2] [--max-tokens N]
//                    [--save-answers OUT.jsonl] [--json]
// llmserve eval-task --hypotheses FILE.jsonl [--json]
//
// Task scores (corpus BLEU-4, chrF, exact match, as sacrebleu computes them by
// default: eval/task_score.h) of a model's greedy answers to reference prompts, with
// the difference from a base model; or of given answers without a model.
#include <cstdio>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "deploy/task_gate.h"

namespace llms::cli {
namespace {

struct Options {
  std::string model, base, reference, hypotheses, save_answers;
  int max_tokens = 256;
  bool json = false;
};

nlohmann::json scores_json(const TaskScores& s) {
  return {{"bleu", s.bleu.score},
          {"chrf", s.chrf},
          {"exact_match", s.exact_match},
          {"references", s.pairs},
          {"brevity_penalty", s.bleu.brevity_penalty},
          {"precisions", s.bleu.precisions},
          {"hyp_len", s.bleu.sys_len},
          {"ref_len", s.bleu.ref_len}};
}

void print_scores(const char* label, const TaskScores& s) {
  const BleuScore& b = s.bleu;
  std::printf("%-6s BLEU %.2f (%.1f/%.1f/%.1f/%.1f, BP %.3f, %lld/%lld tokens)  chrF %.2f  exact match %.3f  (%lld)\n",
              label, b.score, b.precisions[0], b.precisions[1], b.precisions[2], b.precisions[3], b.brevity_penalty,
              static_cast<long long>(b.sys_len), static_cast<long long>(b.ref_len), s.chrf, s.exact_match,
              static_cast<long long>(s.pairs));
}

TaskScores model_scores(const std::string& path, const std::vector<TaskReference>& refs, const Options& o,
                        const std::string& save_to) {
  auto version = value_or_fail(ServingVersion::load({path, path, VersionMeta{}, VersionSettings{}}));
  TaskAnswerOptions opts;
  opts.max_tokens = o.max_tokens;
  std::vector<TaskPair> pairs;
  const TaskScores s = value_or_fail(score_version(*version, refs, opts, &pairs));
  version->stop();
  if (!save_to.empty()) {
    std::ofstream out(save_to);
    for (const TaskPair& p : pairs) out << nlohmann::json{{"hypothesis", p.hypothesis}, {"reference", p.reference}}.dump() << "\n";
    if (!out) fail(invalid_argument("cannot write " + save_to));
  }
  return s;
}

void run(const Options& o) {
  if (o.hypotheses.empty() == o.reference.empty()) fail(invalid_argument("give --hypotheses, or -m with --reference"));
  if (!o.reference.empty() && o.model.empty()) fail(invalid_argument("--reference needs -m MODEL"));
  TaskScores model;
  std::optional<TaskScores> base;
  if (!o.hypotheses.empty()) {
    model = score_task(value_or_fail(read_task_pairs(o.hypotheses)));
  } else {
    const std::vector<TaskReference> refs = value_or_fail(read_task_references(o.reference));
    model = model_scores(o.model, refs, o, o.save_answers);
    if (!o.base.empty()) base = model_scores(o.base, refs, o, "");
  }
  if (o.json) {
    nlohmann::json j = scores_json(model);
    if (base) {
      j["base"] = scores_json(*base);
      j["delta"] = {{"bleu", model.bleu.score - base->bleu.score},
                    {"chrf", model.chrf - base->chrf},
                    {"exact_match", model.exact_match - base->exact_match}};
    }
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  print_scores("model", model);
  if (base) {
    print_scores("base", *base);
    std::printf("delta  BLEU %+.2f  chrF %+.2f  exact match %+.3f\n", model.bleu.score - base->bleu.score,
                model.chrf - base->chrf, model.exact_match - base->exact_match);
  }
}

}  // namespace

void add_eval_task_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "eval-task", "Task scores (BLEU-4, chrF, exact match) of a model's greedy answers, or of given answers");
  cmd->add_option("-m,--model", o->model, "Model (GGUF file or Hugging Face directory) that answers the prompts");
  cmd->add_option("--reference", o->reference, "JSON lines of {\"prompt\"|\"messages\", \"reference\"}");
  cmd->add_option("--base", o->base, "A second model answering the same prompts, to compare with");
  cmd->add_option("--hypotheses", o->hypotheses, "JSON lines of {\"hypothesis\", \"reference\"}: score without a model");
  cmd->add_option("--max-tokens", o->max_tokens, "Tokens of each answer")->capture_default_str();
  cmd->add_option("--save-answers", o->save_answers, "Write the model's answers here (what --hypotheses reads)");
  cmd->add_flag("--json", o->json, "Print one JSON object (bleu, chrf, exact_match, ...)");
  cmd->callback([o] { run(*o); });
}

}  // namespace llms::cli
