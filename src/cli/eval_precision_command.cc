// llmserve eval-precision -m MODEL -f TEXT --variants q4_k,q8_0,f16 --precision-prompt-max 32,128
//   --precision-max-tokens 64,256 [--precision-entropy 0,1.5,2] [--precision-window N] [--requests N]
//   [--short-prompt N] [--long-prompt N] [--gen N] [--rounds N] [-t THREADS] [--per-request] [--json]
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "eval/precision_eval.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tools/quantizer.h"
#include "tokenizer/load_tokenizer.h"

namespace llms::cli {
namespace {

struct Options {
  std::string model, text_file, variants;
  PrecisionEvalOptions eval;
  bool per_request = false;
  bool json = false;
};

void print_tables(const PrecisionEvalResult& r, const Options& o) {
  const auto& e = o.eval;
  std::printf("%d requests (short prompts of %d tokens and long of %d alternating), %d continuation tokens each, "
              "%lld positions scored; %d thread(s)\n\n",
              e.requests, e.short_prompt, e.long_prompt, e.gen, static_cast<long long>(r.scored_positions), e.threads);
  std::printf("| variant | weights (MiB, resident) | weight bytes per token |\n|---|---|---|\n");
  int64_t total = 0;
  for (size_t i = 0; i < r.variants.size(); ++i) {
    std::printf("| %s | %.2f | %lld |\n", r.variants[i].c_str(), static_cast<double>(r.weight_bytes[i]) / (1 << 20),
                static_cast<long long>(r.bytes_per_token[i]));
    total += r.weight_bytes[i];
  }
  std::printf("| all resident | %.2f | |\n\n", static_cast<double>(total) / (1 << 20));
  std::printf("| mode | KL vs best (nats) | top-1 vs best | perplexity | ppl / best's | weight bytes per "
              "generated token | cost / best's | tok/s | started on (");
  for (size_t i = 0; i < r.variants.size(); ++i) std::printf("%s%s", i ? ", " : "", r.variants[i].c_str());
  std::printf(") | fallbacks |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& row : r.rows) {
    std::string started;
    for (size_t i = 0; i < row.first_variant.size(); ++i) {
      started += (i ? "/" : "") + std::to_string(row.first_variant[i]);
    }
    std::printf("| %s | %.5f | %.2f%% | %.4f | %.4f | %.0f | %.3f | %.0f | %s | %lld |\n", row.mode.c_str(), row.kl,
                100 * row.top1, row.ppl, row.ppl_ratio, row.bytes_per_token, row.cost_ratio, row.tok_s, started.c_str(),
                static_cast<long long>(row.fallbacks));
  }
  if (!o.per_request) return;
  for (const auto& row : r.rows) {
    std::printf("\n%s, per request:\n\n| # | prompt | started | ended | fallback at | KL | top-1 | ppl | ppl / best's "
                "|\n|---|---|---|---|---|---|---|---|---|\n",
                row.mode.c_str());
    for (size_t i = 0; i < row.requests.size(); ++i) {
      const auto& q = row.requests[i];
      std::printf("| %zu | %d | %s | %s | %d | %.5f | %.1f%% | %.3f | %.4f |\n", i, q.prompt_tokens,
                  r.variants[static_cast<size_t>(q.first_variant)].c_str(),
                  r.variants[static_cast<size_t>(q.last_variant)].c_str(), q.fallback_at, q.kl, 100 * q.top1, q.ppl,
                  q.ppl_ratio);
    }
  }
}

void run(Options& o) {
  auto parsed = parse_precision_variants(o.variants);
  if (!parsed.ok()) fail(invalid_argument("--variants: " + parsed.status().message()));
  const std::vector<DType> types = parsed.value();
  std::vector<std::unique_ptr<Model>> models;
  std::vector<PrecisionEvalVariant> variants;
  for (DType t : types) {
    models.push_back(value_or_fail(quantized_model(o.model, t, o.eval.threads)));
    variants.push_back({std::string(dtype_name(t)), models.back().get()});
  }
  const auto tokenizer = value_or_fail(load_tokenizer(models.back()->file()));
  const std::vector<int32_t> tokens = tokenizer->encode(value_or_fail(read_file(o.text_file)));
  const PrecisionEvalResult r = value_or_fail(evaluate_precision(variants, *tokenizer, tokens, o.eval));
  if (!o.json) {
    print_tables(r, o);
    return;
  }
  nlohmann::json j = {{"variants", r.variants},         {"weight_bytes", r.weight_bytes},
                      {"bytes_per_token", r.bytes_per_token}, {"positions", r.scored_positions},
                      {"requests", o.eval.requests},     {"short_prompt", o.eval.short_prompt},
                      {"long_prompt", o.eval.long_prompt}, {"gen", o.eval.gen},
                      {"threads", o.eval.threads},       {"modes", nlohmann::json::array()}};
  for (const auto& row : r.rows) {
    nlohmann::json per = nlohmann::json::array();
    for (const auto& q : row.requests) {
      per.push_back({{"prompt_tokens", q.prompt_tokens}, {"first_variant", r.variants[static_cast<size_t>(q.first_variant)]},
                     {"last_variant", r.variants[static_cast<size_t>(q.last_variant)]}, {"fallback_at", q.fallback_at},
                     {"kl", q.kl}, {"top1", q.top1}, {"ppl", q.ppl}, {"ppl_ratio", q.ppl_ratio}});
    }
    j["modes"].push_back({{"mode", row.mode}, {"kl", row.kl}, {"top1", row.top1}, {"ppl", row.ppl},
                          {"ppl_ratio", row.ppl_ratio}, {"bytes_per_token", row.bytes_per_token},
                          {"cost_ratio", row.cost_ratio}, {"tok_s", row.tok_s}, {"first_variant", row.first_variant},
                          {"fallbacks", row.fallbacks}, {"requests", per}});
  }
  std::printf("%s\n", j.dump(1).c_str());
}

}  // namespace

void add_eval_precision_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  o->eval.entropy_bounds = {0.0};
  CLI::App* cmd = app.add_subcommand(
      "eval-precision", "Automatic precision: quality (KL, top-1, perplexity against the best variant) and cost (weight "
                        "bytes per token, tok/s, memory) of always-cheapest, always-best and auto on a mixed workload");
  cmd->add_option("-m,--model", o->model, "GGUF model (each variant is quantized from it)")->required();
  cmd->add_option("-f,--file", o->text_file, "Text file the workload is cut from")->required();
  cmd->add_option("--variants", o->variants, "Types, cheapest first, e.g. q4_k,q8_0,f16")->required();
  cmd->add_option("--precision-prompt-max", o->eval.policy.prompt_max,
                  "Per variant but the last: the longest prompt it takes")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->required();
  cmd->add_option("--precision-max-tokens", o->eval.policy.max_tokens_max,
                  "Per variant but the last: the largest max_tokens it takes")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->required();
  cmd->add_option("--precision-entropy", o->eval.entropy_bounds,
                  "Fallback entropy bounds in nats, one auto row each (0: no fallback)")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--precision-window", o->eval.policy.window, "Tokens the entropy mean is taken over")
      ->capture_default_str();
  cmd->add_option("--requests", o->eval.requests, "Requests in the workload")->capture_default_str();
  cmd->add_option("--short-prompt", o->eval.short_prompt, "Tokens of a short prompt")->capture_default_str();
  cmd->add_option("--long-prompt", o->eval.long_prompt, "Tokens of a long prompt")->capture_default_str();
  cmd->add_option("--gen", o->eval.gen, "Continuation tokens per request")->capture_default_str();
  cmd->add_option("--rounds", o->eval.rounds, "Speed: rounds of every mode, interleaved (0: no speed runs)")
      ->capture_default_str();
  add_threads_flag(cmd, &o->eval.threads);
  cmd->add_flag("--per-request", o->per_request, "Also print every request of every mode");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] { run(*o); });
}

}  // namespace llms::cli
