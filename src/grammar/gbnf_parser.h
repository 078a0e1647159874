// GBNF: the grammar text format of llama.cpp, as llama-server accepts it in a
// request's "grammar" field.
//
//   root  ::= item+                       # a rule per line; `root` is where output starts
//   item  ::= "- " [^\n]+ "\n"            # "literals", [classes], [^negated], . (any character)
//   num   ::= [0-9]{1,3} ("." [0-9]+)?    # groups, * + ? {m} {m,} {m,n}, alternatives with |
//
// Literals and classes are Unicode code points (escapes \n \r \t \\ \" \[ \] \- \xHH
// \uHHHH \UHHHHHHHH); output is always well-formed UTF-8. A rule ends at the end of
// its line unless a parenthesis is open; a line that starts with | continues the rule
// above. Refused with a message naming the line and column: token references
// (<...>, !<...>), a missing `root`, a rule defined twice or used but never defined,
// left recursion, nesting deeper than 256 groups.
//
// Thread-safety: pure function.
#pragma once

#include <string_view>

#include "base/status.h"
#include "grammar/grammar.h"
#include "grammar/grammar_builder.h"

namespace llms {

Result<Grammar> parse_gbnf(std::string_view text, const GrammarLimits& limits = {});

}  // namespace llms
