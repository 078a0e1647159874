// Regular expressions → grammar expressions: the "regex" request extension (the
// whole output must match) and the `pattern` keyword of JSON Schema (a search: the
// string must contain a match unless the pattern is anchored with ^ and $).
//
// Supported (ECMA-262 syntax, as JSON Schema specifies): literals, `.`, classes
// [a-z] [^...] with escapes, \d \D \w \W \s \S, \t \n \r \f \v \0 \xHH \uHHHH \u{H+},
// escaped metacharacters, groups (...) (?:...) (?<name>...), alternation, the
// quantifiers * + ? {m} {m,} {m,n} (lazy forms match the same language), ^ at the
// start and $ at the end of a top-level alternative. Refused, naming the construct:
// back-references, lookaround, \b \B, inline flags, anchors anywhere else.
//
// In JSON-string mode every character is written the way it must appear inside a
// JSON string: `"` as \", `\` as \\, control characters as escapes; others raw.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "base/status.h"
#include "grammar/grammar.h"
#include "grammar/grammar_builder.h"

namespace llms {

enum class RegexUse {
  kFullMatch,   // the text is exactly one match (^ and $ are implied)
  kSearch,      // the text contains a match (JSON Schema `pattern`)
};

struct RegexOptions {
  RegexUse use = RegexUse::kFullMatch;
  bool json_string = false;  // write characters as JSON string content
  WorkMeter* meter = nullptr;  // charged a unit per atom (GrammarLimits::meter)
};

// An expression for the texts the pattern allows. Errors are INVALID_ARGUMENT
// naming the construct and its offset in the pattern, or the meter's status once it
// stops (compile_stop_status).
Result<GrammarExpr> regex_to_expr(std::string_view pattern, const RegexOptions& options);

// A grammar whose whole output matches `pattern`.
Result<Grammar> parse_regex(std::string_view pattern, const GrammarLimits& limits = {});

// The characters of `ranges` written as JSON string content (escapes where JSON
// needs them): what `json_string` mode emits for a class.
GrammarExpr json_string_chars(const CodepointRanges& ranges);

}  // namespace llms
