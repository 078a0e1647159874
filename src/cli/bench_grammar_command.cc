// llmserve bench-grammar -m MODEL [--vocab-from VOCAB.gguf] [--concurrency N] ...
// Decode speed with a JSON Schema active against unconstrained decoding in the same
// run, and the compile time of a 20-property schema (eval/grammar_benchmark.h).
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/log.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "eval/grammar_benchmark.h"
#include "io/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/load_tokenizer.h"

namespace llms::cli {
namespace {

struct Options {
  std::string model;
  std::string vocab_from;
  GrammarBenchSpec spec;
  int threads = 0;
  bool json = false;
};

std::string list(const std::vector<double>& v, double scale) {
  std::string out;
  for (const double x : v) out += (out.empty() ? "" : " ") + std::to_string(static_cast<int>(x * scale + 0.5));
  return out;
}

void run(const Options& o) {
  auto model = value_or_fail(Model::load(o.model));
  if (model->config().synthetic) log_info("{}: synthetic model (random weights): speed only", o.model);
  // A real vocabulary may stand in for a synthetic model's (same size): the grammar's
  // cost depends on the token texts.
  std::unique_ptr<Tokenizer> tokenizer;
  if (o.vocab_from.empty()) {
    tokenizer = value_or_fail(load_tokenizer(model->file()));
  } else {
    tokenizer = value_or_fail(load_tokenizer(o.vocab_from));
  }
  if (tokenizer->vocab_size() != model->config().n_vocab) {
    fail(invalid_argument(fmt::format("--vocab-from has {} tokens, the model {}", tokenizer->vocab_size(),
                                      model->config().n_vocab)));
  }
  EngineConfig c;
  c.threads = o.threads;
  const GrammarBenchResult r = value_or_fail(run_grammar_benchmark(*model, *tokenizer, c, o.spec));
  if (o.json) {
    nlohmann::json j = {{"vocab", r.vocab}, {"vocab_view_s", r.vocab_view_s}, {"compile_s", r.compile_s},
                        {"compile_median_s", r.compile_median_s},
                        {"classify_all_s", r.classify_all_s}, {"classify_all_median_s", r.classify_all_median_s},
                        {"points", r.compile_stats.num_points}, {"states", r.compile_stats.num_states},
                        {"uncertain", r.compile_stats.num_uncertain},
                        {"decode_points_classified", r.decode_stats.num_classified},
                        {"decode_points", r.decode_stats.num_points},
                        {"decode_classify_s", r.decode_stats.classify_seconds}, {"free_tok_s", r.free_tok_s},
                        {"schema_tok_s", r.schema_tok_s}, {"free_median_tok_s", r.free_median_tok_s},
                        {"schema_median_tok_s", r.schema_median_tok_s}, {"ratio", r.ratio},
                        {"concurrency", o.spec.concurrency}, {"temperature", o.spec.temperature}, {"max_tokens", o.spec.max_tokens}};
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("vocabulary %d tokens (view built in %.1f ms)\n", r.vocab, r.vocab_view_s * 1e3);
  const CompileStats& cs = r.compile_stats;
  std::printf("20-property schema: compile %.2f ms median (each: %s us); classifying all %d points %.1f ms median "
              "(each: %s ms; %lld automaton states, %lld accepted and %lld uncertain token entries)\n",
              r.compile_median_s * 1e3, list(r.compile_s, 1e6).c_str(), cs.num_points, r.classify_all_median_s * 1e3,
              list(r.classify_all_s, 1e3).c_str(), static_cast<long long>(cs.num_states),
              static_cast<long long>(cs.num_accepted), static_cast<long long>(cs.num_uncertain));
  std::printf("decode rounds met %d of the %d points of their schema, classified in %.1f ms in all\n",
              r.decode_stats.num_classified, r.decode_stats.num_points, r.decode_stats.classify_seconds * 1e3);
  std::printf("decode, %d at once: free %.1f tok/s (rounds: %s), schema %.1f tok/s (rounds: %s), ratio %.3f\n",
              o.spec.concurrency, r.free_median_tok_s, list(r.free_tok_s, 1).c_str(), r.schema_median_tok_s,
              list(r.schema_tok_s, 1).c_str(), r.ratio);
}

}  // namespace

void add_bench_grammar_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("bench-grammar", "Decode speed under a JSON Schema vs unconstrained, schema compile time");
  cmd->add_option("-m,--model", o->model, "GGUF model")->required();
  cmd->add_option("--vocab-from", o->vocab_from, "GGUF whose vocabulary replaces the model's (same size)");
  cmd->add_option("--rounds", o->spec.rounds, "Rounds of each kind, alternating")->capture_default_str();
  cmd->add_option("--concurrency", o->spec.concurrency, "Requests decoding together")->capture_default_str();
  cmd->add_option("--prompt-tokens", o->spec.prompt_tokens, "Prompt length")->capture_default_str();
  cmd->add_option("--max-tokens", o->spec.max_tokens, "Tokens generated per request")->capture_default_str();
  cmd->add_option("--compile-repeats", o->spec.compile_repeats, "Cold compiles of the schema")->capture_default_str();
  cmd->add_option("--temperature", o->spec.temperature, "Sampling temperature of both kinds (0: greedy)")
      ->capture_default_str();
  cmd->add_option("--seed", o->spec.seed, "Seed of prompts and sampling")->capture_default_str();
  add_threads_flag(cmd, &o->threads);
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] { run(*o); });
}

}  // namespace llms::cli
