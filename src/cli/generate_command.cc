// llmserve generate -m MODEL (-p PROMPT | --prompts-file F) [-n N] [--temp T] ...
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/log.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "tools/batch_generator.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/load_tokenizer.h"

namespace llms::cli {
namespace {

struct Options {
  std::string model;
  std::string prompt;
  std::string prompts_file;
  int max_tokens = 128;
  float temperature = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int64_t seed = -1;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool no_bos = false;
  bool json = false;
  std::unique_ptr<ConfigFlags> engine;  // the engine's settings, as serve spells them
};

// The engine's settings: serve's defaults but one prompt running at a time, then the flags.
EngineConfig engine_config(const Options& o) {
  ServeConfig c;
  c.engine.batching.max_running = 1;
  o.engine->apply(c);
  return c.engine;
}

std::vector<std::string> read_prompts(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(not_found("cannot open prompts file '" + path + "'"));
  std::vector<std::string> prompts;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) prompts.push_back(line);
  }
  if (prompts.empty()) fail(invalid_argument("prompts file '" + path + "' has no non-empty line"));
  return prompts;
}

void run(const Options& o) {
  if (o.prompt.empty() == o.prompts_file.empty()) fail(invalid_argument("give exactly one of --prompt and --prompts-file"));
  const EngineConfig ec = engine_config(o);
  auto model = value_or_fail(Model::load(o.model));
  if (model->config().synthetic) log_warn("{}: synthetic model with RANDOM weights; its text is noise", o.model);
  auto tokenizer = value_or_fail(load_tokenizer(model->file()));

  const std::vector<std::string> prompts = o.prompts_file.empty() ? std::vector<std::string>{o.prompt} : read_prompts(o.prompts_file);
  std::vector<RequestParams> specs(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EncodeOptions enc;
    enc.add_bos = !o.no_bos && tokenizer->add_bos();
    specs[i].prompt = tokenizer->encode(prompts[i], enc);
    specs[i].max_tokens = o.max_tokens;
    specs[i].stop = o.stop;
    specs[i].ignore_eos = o.ignore_eos;
    SamplingParams& sp = specs[i].sampling;
    sp.temperature = o.temperature;
    sp.top_k = o.top_k;
    sp.top_p = o.top_p;
    sp.min_p = o.min_p;
    sp.repetition_penalty = o.repeat_penalty;
    sp.presence_penalty = o.presence_penalty;
    sp.frequency_penalty = o.frequency_penalty;
    if (o.seed >= 0) sp.seed = static_cast<uint64_t>(o.seed) + i;
  }
  BatchGenerator gen(*model, *tokenizer, ec);

  const bool stream = specs.size() == 1 && !o.json;
  GeneratorStats st;
  bool echoed = false;
  auto outputs = value_or_fail(gen.run(specs, [&](size_t, std::string_view text) {
    if (!stream) return;
    if (!echoed) {
      std::fputs(prompts[0].c_str(), stdout);
      echoed = true;
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }, &st));
  if (stream) {
    if (!echoed) std::fputs(prompts[0].c_str(), stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);
  }
  const double tok_s = st.total_s > 0 ? static_cast<double>(st.generated_tokens) / st.total_s : 0.0;
  if (o.json) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      nlohmann::json j = {{"index", i}, {"text", outputs[i].text}, {"prompt_tokens", outputs[i].prompt_tokens},
                          {"completion_tokens", outputs[i].completion_tokens},
                          {"cached_prompt_tokens", outputs[i].cached_prompt_tokens},
                          {"finish_reason", finish_reason_name(outputs[i].finish)}};
      std::printf("%s\n", j.dump().c_str());
    }
    nlohmann::json summary = {{"tokens_per_s", tok_s},
                              {"prompt_tokens", st.prompt_tokens},
                              {"completion_tokens", st.generated_tokens},
                              {"prefill_tokens_computed", st.prefill_tokens_computed},
                              {"prefix_cache_hit_tokens", st.prefix_cache_hit_tokens},
                              {"kv_blocks_total", st.kv_blocks_total},
                              {"kv_waste_pct", st.kv_waste_pct},
                              {"kv_shared_pct", st.kv_shared_pct},
                              {"preemptions", st.preemptions},
                              {"steps", st.steps},
                              {"spec_draft_tokens", st.spec_draft_tokens},
                              {"spec_accepted_tokens", st.spec_accepted_tokens},
                              {"seconds", st.total_s}};
    std::printf("%s\n", summary.dump().c_str());
    return;
  }
  if (!stream) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::printf("--- [%zu] %s%s\n", i, prompts[i].c_str(), outputs[i].text.c_str());
    }
  }
  const double decode_s = st.total_s - st.first_token_s;
  std::fprintf(stderr, "prompt: %lld tokens in %.3f s (%.1f tok/s)\n", static_cast<long long>(st.prompt_tokens),
               st.first_token_s, st.first_token_s > 0 ? st.prompt_tokens / st.first_token_s : 0.0);
  std::fprintf(stderr, "generation: %lld tokens in %.3f s (%.1f tok/s decode, %.1f tok/s overall)\n",
               static_cast<long long>(st.generated_tokens), st.total_s,
               decode_s > 0 && st.generated_tokens > 1 ? (st.generated_tokens - static_cast<double>(specs.size())) / decode_s : 0.0,
               tok_s);
  if (st.spec_draft_tokens > 0) {
    std::fprintf(stderr, "speculative: %lld of %lld proposed tokens accepted (%.1f%%), %.2f tokens per target pass\n",
                 static_cast<long long>(st.spec_accepted_tokens), static_cast<long long>(st.spec_draft_tokens),
                 100.0 * static_cast<double>(st.spec_accepted_tokens) / static_cast<double>(st.spec_draft_tokens),
                 st.steps > 0 ? static_cast<double>(st.generated_tokens) / static_cast<double>(st.steps) : 0.0);
  }
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text from a prompt");
  cmd->add_option("-m,--model", o->model, "GGUF model")->required();
  cmd->add_option("-p,--prompt", o->prompt, "Prompt text");
  cmd->add_option("--prompts-file", o->prompts_file, "File with one prompt per line (runs them batched)");
  cmd->add_option("-n,--max-tokens", o->max_tokens, "Tokens to generate at most")->capture_default_str();
  cmd->add_option("--temp,--temperature", o->temperature, "Temperature (0 = greedy)")->capture_default_str();
  cmd->add_option("--top-k", o->top_k, "Top-k (0 = off)")->capture_default_str();
  cmd->add_option("--top-p", o->top_p, "Top-p (1 = off)")->capture_default_str();
  cmd->add_option("--min-p", o->min_p, "Min-p (0 = off)")->capture_default_str();
  cmd->add_option("--repeat-penalty", o->repeat_penalty, "Repetition penalty (1 = off)")->capture_default_str();
  cmd->add_option("--presence-penalty", o->presence_penalty, "Presence penalty")->capture_default_str();
  cmd->add_option("--frequency-penalty", o->frequency_penalty, "Frequency penalty")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Random seed (-1 = random)")->capture_default_str();
  cmd->add_option("--stop", o->stop, "Stop string (repeatable)");
  cmd->add_flag("--ignore-eos", o->ignore_eos, "Keep generating past end-of-generation tokens");
  cmd->add_flag("--no-bos", o->no_bos, "Do not add the BOS token");
  o->engine = std::make_unique<ConfigFlags>(
      cmd, std::vector<std::string>{"threads", "max_running", "context_length", "max_batch_tokens", "kv_block_size",
                                    "kv_k_type", "kv_v_type", "prefix_cache", "speculative", "draft_model",
                                    "spec_tokens", "spec_ngram_max"});
  cmd->add_flag("--json", o->json, "One JSON object per prompt, then a summary");
  cmd->callback([o] { run(*o); });
}

}  // namespace llms::cli
