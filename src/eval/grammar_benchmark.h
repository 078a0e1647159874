// The cost of structured outputs: decode speed with a JSON Schema active against
// unconstrained decoding in the same run (rounds alternate, so both see the same
// machine), and how long a schema takes to compile for the model's vocabulary.
//
// Each round submits `concurrency` requests of one kind together (same prompts,
// same temperature, EOS ignored, max_tokens each) and waits for all of them; a round's
// decode rate is the tokens after each request's first over the time after it. The
// schema's outputs are checked to be JSON text the schema's grammar allows so far
// (the first byte '[' for the default array), so the constrained rounds are
// constrained.
//
// Thread-safety: run on one thread; it starts and stops its own engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "engine/engine_config.h"
#include "grammar/compiled_grammar.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace llms {

struct GrammarBenchSpec {
  int rounds = 3;            // per kind, alternating
  int concurrency = 1;       // requests decoding together in a round
  int prompt_tokens = 32;
  int max_tokens = 128;
  int compile_repeats = 5;   // cold compiles of the schema
  uint64_t seed = 1;
  // 0: greedy, so that both kinds pick by argmax and the difference is the grammar's
  // (at temperature 1 the unconstrained sampler works over the whole vocabulary, the
  // constrained one over the allowed tokens only).
  float temperature = 0.0f;
  // The constrained requests' schema; null: an array of at least 8 of the 20-property
  // object below (so that no answer is complete before max_tokens).
  nlohmann::ordered_json schema;
};

struct GrammarBenchResult {
  int vocab = 0;
  double vocab_view_s = 0;                   // building the grammar's view of the vocabulary
  std::vector<double> compile_s;             // schema → grammar → per-token tables, each cold
  double compile_median_s = 0;
  std::vector<double> classify_all_s;        // then every point classified (what decoding may meet)
  double classify_all_median_s = 0;
  CompileStats compile_stats;                // of the last compile, fully classified
  CompileStats decode_stats;                 // the decode rounds' grammar: points met, their cost
  std::vector<double> free_tok_s, schema_tok_s;  // decode tok/s per round
  double free_median_tok_s = 0, schema_median_tok_s = 0;
  double ratio = 0;                          // schema / free (medians)
  int64_t free_tokens = 0, schema_tokens = 0;
};

// A 20-property object schema: strings with lengths, a pattern and formats, integer and
// number bounds, enums, booleans, arrays and a nested object, some optional.
nlohmann::ordered_json twenty_property_schema();

Result<GrammarBenchResult> run_grammar_benchmark(const Model& model, const Tokenizer& tokenizer,
                                                 const EngineConfig& config, const GrammarBenchSpec& spec);

}  // namespace llms
