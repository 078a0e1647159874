// A request's output constraint (response_format, grammar, regex) → a grammar
// compiled for the engine that will run it. Front-end errors (an unsupported JSON Schema keyword, a GBNF syntax
// error, an unsupported regex construct) are 400s naming the parameter.
//
// Thread-safety: pure functions; Engine::compile_grammar() is thread-safe.
#pragma once

#include <memory>
#include <optional>

#include "engine/engine.h"
#include "grammar/grammar.h"
#include "server/openai_request.h"

namespace llms {

// The vocabulary-free grammar of `c` (nullptr for kNone).
std::optional<ApiError> constraint_grammar(const OutputConstraint& c, std::shared_ptr<const Grammar>* out);

// Compiles the constraint for `engine`; leaves *out null when there is none.
std::optional<ApiError> compile_constraint(const OutputConstraint& c, Engine& engine,
                                           std::shared_ptr<const CompiledGrammar>* out);

}  // namespace llms
