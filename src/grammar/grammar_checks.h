// The checks GrammarBuilder::build() runs on a lowered grammar, each a clear
// INVALID_ARGUMENT naming the rule:
//   * left recursion, also through rules that can match the empty text (the matcher
//     expands alternatives eagerly and would never stop);
//   * a reachable alternative that can never finish (it refers back to itself with
//     no way out, or needs a character class that is empty): a matcher entering it
//     could produce text that can never be completed.
//
// Thread-safety: pure functions.
#pragma once

#include <vector>

#include "base/status.h"
#include "grammar/grammar.h"
#include "grammar/grammar_budget.h"

namespace llms {

// Each pass over the grammar is charged to `meter` (if given), about one unit per
// element; once it stops, the checks end with compile_stop_status().
Status check_grammar(const Grammar& g, WorkMeter* meter = nullptr);

// Per rule: can it match the empty text? (Left partial once `meter` stops.)
std::vector<bool> nullable_rules(const Grammar& g, WorkMeter* meter = nullptr);

}  // namespace llms
