#include "eval/spec_benchmark.h"

#include <algorithm>

#include "base/clock.h"
#include "base/random.h"
#include "engine/engine.h"
#include "engine/proposer.h"

namespace llms {
namespace {

struct OneRun {
  std::vector<int32_t> tokens;  // prompt and output
  double seconds = 0;
  EngineSnapshot snapshot;
};

// Generates `o.output_tokens` greedy tokens after `prompt` on a fresh engine.
Result<OneRun> generate(const Model& model, const Tokenizer& tok, EngineConfig c, std::unique_ptr<Proposer> proposer,
                        const std::vector<int32_t>& prompt, int n) {
  c.result_cache_bytes = 0;
  LLMS_ASSIGN_OR_RETURN(auto engine, Engine::create(model, tok, c));
  if (proposer) engine->set_proposer(std::move(proposer));
  RequestParams p;
  p.prompt = prompt;
  p.max_tokens = n;
  p.ignore_eos = true;
  p.sampling.temperature = 0;
  const Stopwatch w;
  LLMS_ASSIGN_OR_RETURN(auto h, engine->submit(p));
  engine->run_until_idle();
  OneRun r;
  r.seconds = w.elapsed_s();
  r.tokens = prompt;
  for (auto& ev : h->drain()) {
    if (const auto* t = std::get_if<TokenEvent>(&ev)) r.tokens.push_back(t->token);
  }
  r.snapshot = engine->snapshot();
  return r;
}

}  // namespace

Result<SpecBenchResult> run_spec_benchmark(const Model& model, const Tokenizer& tok, const SpecBenchOptions& o) {
  if (o.prompt_tokens < 1 || o.output_tokens < 2 || o.rounds < 1) return invalid_argument("counts must be positive");
  if (!(o.corrupt >= 0 && o.corrupt <= 1)) return invalid_argument("--corrupt must be in [0, 1]");
  EngineConfig c;
  c.threads = o.threads;
  c.speculative.tokens = o.spec_tokens;
  c.context_length = o.prompt_tokens + o.output_tokens + 1;
  c.batching.max_running = 1;
  if (o.proposer == "ngram") {
    c.speculative.mode = SpeculativeMode::kNgram;
  } else if (o.proposer == "draft") {
    c.speculative.mode = SpeculativeMode::kDraft;
    c.speculative.draft_model = o.draft_model;
  } else if (o.proposer != "replay") {
    return invalid_argument("--proposer must be replay, ngram or draft");
  }
  LLMS_RETURN_IF_ERROR(c.validate());
  std::vector<int32_t> prompt = {tok.bos_id() >= 0 ? tok.bos_id() : 1};
  Rng rng(7);
  while (static_cast<int>(prompt.size()) < o.prompt_tokens) prompt.push_back(3 + static_cast<int32_t>(rng.below(model.config().n_vocab - 3)));
  EngineConfig plain_config = c;
  plain_config.speculative.mode = SpeculativeMode::kOff;
  plain_config.speculative.draft_model.clear();
  SpecBenchResult r;
  double best_plain = 1e30, best_spec = 1e30;
  for (int round = 0; round < o.rounds; ++round) {
    LLMS_ASSIGN_OR_RETURN(const OneRun plain, generate(model, tok, plain_config, nullptr, prompt, o.output_tokens));
    std::unique_ptr<Proposer> proposer;
    if (o.proposer == "replay") proposer = std::make_unique<ReplayProposer>(plain.tokens, o.corrupt, model.config().n_vocab, 11 + round);
    LLMS_ASSIGN_OR_RETURN(const OneRun spec, generate(model, tok, c, std::move(proposer), prompt, o.output_tokens));
    best_plain = std::min(best_plain, plain.seconds);
    best_spec = std::min(best_spec, spec.seconds);
    r.identical = spec.tokens == plain.tokens;
    if (!r.identical) return internal_error("the speculative output differs from the plain output");
    r.acceptance = spec.snapshot.spec_draft_tokens > 0
                       ? static_cast<double>(spec.snapshot.spec_accepted_tokens) / static_cast<double>(spec.snapshot.spec_draft_tokens)
                       : 0;
    r.tokens_per_pass = static_cast<double>(o.output_tokens) / static_cast<double>(spec.snapshot.steps);
  }
  r.plain_tok_s = o.output_tokens / best_plain;
  r.spec_tok_s = o.output_tokens / best_spec;
  r.speedup = r.spec_tok_s / r.plain_tok_s;
  return r;
}

}  // namespace llms
