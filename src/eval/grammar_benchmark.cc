#include "eval/grammar_benchmark.h"

#include <algorithm>

#include "base/clock.h"
#include "base/random.h"
#include "engine/engine.h"
#include "grammar/json_schema.h"
#include "eval/load_benchmark.h"

namespace llms {
namespace {

struct Round {
  double tok_s = 0;
  int64_t tokens = 0;
  std::vector<std::string> texts;
};

// One round: every request submitted, then each drained to its end.
Result<Round> run_round(Engine& engine, const std::vector<RequestParams>& requests) {
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const RequestParams& p : requests) {
    LLMS_ASSIGN_OR_RETURN(auto h, engine.submit(p));
    handles.push_back(std::move(h));
  }
  Round r;
  double decode_s = 0;
  int64_t decode_tokens = 0;
  for (auto& h : handles) {
    std::string text;
    RequestEvent ev;
    while (h->next(&ev)) {
      if (const auto* t = std::get_if<TokenEvent>(&ev)) {
        text += t->text;
        continue;
      }
      const auto& f = std::get<FinishEvent>(ev);
      if (f.reason == FinishReason::kError || f.reason == FinishReason::kRejected) {
        return internal_error("benchmark request failed: " + f.message);
      }
      text += f.text;
      r.tokens += f.completion_tokens;
      decode_tokens += f.completion_tokens - 1;
      decode_s = std::max(decode_s, f.timings.e2e_s - f.timings.ttft_s);
      break;
    }
    r.texts.push_back(std::move(text));
  }
  // The requests decode together: the tokens after the first ones over the longest
  // time any of them took after its first token.
  r.tok_s = decode_s > 0 ? static_cast<double>(decode_tokens) / decode_s : 0;
  return r;
}

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

}  // namespace

nlohmann::ordered_json twenty_property_schema() {
  return nlohmann::ordered_json::parse(R"({
    "type": "object",
    "properties": {
      "id": {"type": "string", "format": "uuid"},
      "name": {"type": "string", "minLength": 1, "maxLength": 24},
      "email": {"type": "string", "format": "email"},
      "age": {"type": "integer", "minimum": 0, "maximum": 130},
      "score": {"type": "number", "minimum": 0, "maximum": 100},
      "active": {"type": "boolean"},
      "role": {"enum": ["admin", "editor", "viewer"]},
      "created": {"type": "string", "format": "date-time"},
      "birthday": {"type": "string", "format": "date"},
      "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 5},
      "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
      "rank": {"type": "integer", "minimum": -1000, "maximum": 1000},
      "ratio": {"type": "number"},
      "nickname": {"type": ["string", "null"], "maxLength": 16},
      "country": {"enum": ["FR", "DE", "US", "JP", "BR", null]},
      "address": {"type": "object", "properties": {
          "street": {"type": "string", "maxLength": 32},
          "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
        "required": ["street"], "additionalProperties": false},
      "points": {"type": "array", "items": {"type": "integer"}, "maxItems": 4},
      "verified": {"type": "boolean"},
      "level": {"type": "integer", "minimum": 1, "maximum": 10},
      "note": {"type": "string", "maxLength": 40}
    },
    "required": ["id", "name", "age", "active", "role", "created", "tags", "address", "level"],
    "additionalProperties": false
  })");
}

Result<GrammarBenchResult> run_grammar_benchmark(const Model& model, const Tokenizer& tokenizer,
                                                 const EngineConfig& config, const GrammarBenchSpec& spec) {
  if (spec.rounds < 1 || spec.concurrency < 1 || spec.prompt_tokens < 2 || spec.max_tokens < 2) {
    return invalid_argument("grammar benchmark: rounds, concurrency, prompt and max tokens must be positive");
  }
  const nlohmann::ordered_json schema =
      spec.schema.is_null()
          ? nlohmann::ordered_json{{"type", "array"}, {"items", twenty_property_schema()}, {"minItems", 8}}
          : spec.schema;
  GrammarBenchResult out;
  Stopwatch w;
  const auto vocab = std::make_shared<const TokenVocabulary>(TokenVocabulary::from_tokenizer(tokenizer));
  out.vocab_view_s = w.elapsed_s();
  out.vocab = vocab->size();
  for (int i = 0; i < spec.compile_repeats; ++i) {
    w.reset();
    LLMS_ASSIGN_OR_RETURN(Grammar g, json_schema_grammar(twenty_property_schema()));
    LLMS_ASSIGN_OR_RETURN(auto cg, CompiledGrammar::compile(std::make_shared<const Grammar>(std::move(g)), vocab));
    out.compile_s.push_back(w.elapsed_s());
    w.reset();
    cg->classify_all();
    out.classify_all_s.push_back(w.elapsed_s());
    out.compile_stats = cg->stats();
  }
  out.compile_median_s = median(out.compile_s);
  out.classify_all_median_s = median(out.classify_all_s);

  EngineConfig c = config;
  c.result_cache_bytes = 0;
  c.batching.max_running = std::max(c.batching.max_running, spec.concurrency);
  c.admission.max_waiting_requests = std::max(c.admission.max_waiting_requests, spec.concurrency);
  LLMS_ASSIGN_OR_RETURN(auto engine, Engine::create(model, tokenizer, c));
  LLMS_ASSIGN_OR_RETURN(Grammar g, json_schema_grammar(schema));
  LLMS_ASSIGN_OR_RETURN(auto compiled, engine->compile_grammar(std::make_shared<const Grammar>(std::move(g))));
  Rng rng(spec.seed);
  std::vector<RequestParams> free_requests;
  for (int i = 0; i < spec.concurrency; ++i) {
    RequestParams p;
    p.prompt.push_back(1);
    for (int t = 1; t < spec.prompt_tokens; ++t) p.prompt.push_back(3 + static_cast<int32_t>(rng.below(out.vocab - 3)));
    p.max_tokens = spec.max_tokens;
    p.ignore_eos = true;
    p.sampling.temperature = spec.temperature;
    p.sampling.seed = spec.seed + static_cast<uint64_t>(i);
    p.timeout_s = 3600;
    free_requests.push_back(std::move(p));
  }
  std::vector<RequestParams> schema_requests = free_requests;
  for (RequestParams& p : schema_requests) p.grammar = compiled;
  engine->start();
  Status failure;
  for (int round = 0; round < spec.rounds && failure.ok(); ++round) {
    // Which kind goes first alternates too, so that neither always follows the other.
    const bool free_first = round % 2 == 0;
    Result<Round> f = internal_error("not run"), s = internal_error("not run");
    if (free_first) f = run_round(*engine, free_requests);
    s = run_round(*engine, schema_requests);
    if (!free_first) f = run_round(*engine, free_requests);
    if (!f.ok() || !s.ok()) {
      failure = f.ok() ? s.status() : f.status();
      break;
    }
    for (const std::string& text : s->texts) {
      if (spec.schema.is_null() && (text.empty() || text[0] != '[')) {
        failure = internal_error("a constrained output does not start as the schema says: " + text.substr(0, 40));
      }
    }
    out.free_tok_s.push_back(f->tok_s);
    out.schema_tok_s.push_back(s->tok_s);
    out.free_tokens += f->tokens;
    out.schema_tokens += s->tokens;
  }
  engine->stop();
  LLMS_RETURN_IF_ERROR(failure);
  out.decode_stats = compiled->stats();
  out.free_median_tok_s = median(out.free_tok_s);
  out.schema_median_tok_s = median(out.schema_tok_s);
  out.ratio = out.free_median_tok_s > 0 ? out.schema_median_tok_s / out.free_median_tok_s : 0;
  return out;
}

}  // namespace llms
