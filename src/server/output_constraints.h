// A request's output constraint (response_format, grammar, regex) or its tools → the
// grammar the output must follow, then compiled for the engine that will run it under
// the server's budget. Front-end errors (an unsupported JSON Schema keyword, a GBNF
// syntax error, an unsupported regex construct) and a compile past its budget are 400s
// naming the parameter (and, past the budget, the limit: grammar_budget.h).
//
// Thread-safety: pure functions; Engine::compile_grammar() is thread-safe. They run on
// the grammar pool's threads (grammar_pool.h), never on an I/O thread.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "chat/tool_calls.h"
#include "engine/engine.h"
#include "grammar/grammar.h"
#include "server/openai_request.h"

namespace llms {

// The vocabulary-free grammar of `c` (nullptr for kNone), its front end and builder
// charging `meter` (null: unmetered): the front end's error, or the meter's status
// once it stops (RESOURCE_EXHAUSTED, CANCELLED).
Result<std::shared_ptr<const Grammar>> constraint_grammar(const OutputConstraint& c, WorkMeter* meter = nullptr);

// What a request's output must follow: its constraint, or (with `tools`) the calls of
// its tools in `format`.
struct GrammarSpec {
  OutputConstraint constraint;
  std::optional<ToolRequest> tools;
  ToolCallFormat format = ToolCallFormat::kHermes;
  bool empty() const { return constraint.kind == ConstraintKind::kNone && !tools; }
};

// How a compile ended, for metrics: ok, invalid, over_budget or cancelled.
struct CompileOutcome {
  std::shared_ptr<const CompiledGrammar> grammar;  // set when ok
  std::optional<ApiError> error;
  std::string_view result = "ok";
};

// Makes and compiles `spec`'s grammar for `engine` under `budget` (whose cancel flag
// stops it): parsing and building it, then compiling it, share the budget's
// compile_work and compile_seconds.
CompileOutcome compile_spec(const GrammarSpec& spec, Engine& engine, const GrammarBudget& budget);

}  // namespace llms
