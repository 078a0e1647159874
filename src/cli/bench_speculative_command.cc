// llmserve bench-speculative -m MODEL [--proposer replay|ngram|draft] [--corrupt F]
//                            [--draft-model FILE] [--spec-tokens K] [-n N] [--json]
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/config_flags.h"
#include "eval/spec_benchmark.h"
#include "tokenizer/load_tokenizer.h"

namespace llms::cli {

void add_bench_speculative_command(CLI::App& app) {
  struct Options {
    std::string model;
    SpecBenchOptions bench;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("bench-speculative", "Single-stream decode with and without speculative decoding");
  cmd->add_option("-m,--model", o->model, "GGUF model (the target)")->required();
  cmd->add_option("--proposer", o->bench.proposer, "replay (controlled acceptance), ngram or draft")->capture_default_str();
  cmd->add_option("--corrupt", o->bench.corrupt, "replay: share of proposed tokens made wrong")->capture_default_str();
  cmd->add_option("--draft-model", o->bench.draft_model, "draft: the draft model");
  cmd->add_option("--spec-tokens", o->bench.spec_tokens, "Most tokens proposed per step")->capture_default_str();
  cmd->add_option("-n,--tokens", o->bench.output_tokens, "Tokens generated per run")->capture_default_str();
  cmd->add_option("--prompt-tokens", o->bench.prompt_tokens, "Prompt tokens")->capture_default_str();
  cmd->add_option("--rounds", o->bench.rounds, "Plain and speculative runs, alternated (best of each)")->capture_default_str();
  add_threads_flag(cmd, &o->bench.threads);
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] {
    auto model = value_or_fail(Model::load(o->model));
    auto tok = value_or_fail(load_tokenizer(model->file()));
    const SpecBenchResult r = value_or_fail(run_spec_benchmark(*model, *tok, o->bench));
    if (o->json) {
      nlohmann::json j = {{"proposer", o->bench.proposer}, {"spec_tokens", o->bench.spec_tokens},
                          {"plain_tok_s", r.plain_tok_s},   {"spec_tok_s", r.spec_tok_s},
                          {"speedup", r.speedup},           {"acceptance", r.acceptance},
                          {"tokens_per_pass", r.tokens_per_pass}, {"identical", r.identical}};
      std::printf("%s\n", j.dump().c_str());
      return;
    }
    std::printf("plain %.2f tok/s, speculative (%s, K=%d) %.2f tok/s: %.2fx; acceptance %.1f%%, %.2f tokens per target "
                "pass; outputs identical\n",
                r.plain_tok_s, o->bench.proposer.c_str(), o->bench.spec_tokens, r.spec_tok_s, r.speedup,
                100 * r.acceptance, r.tokens_per_pass);
  });
}

}  // namespace llms::cli
