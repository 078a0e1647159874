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

namespace llms {

Status check_grammar(const Grammar& g);

// Per rule: can it match the empty text?
std::vector<bool> nullable_rules(const Grammar& g);

}  // namespace llms
