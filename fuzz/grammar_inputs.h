// Shared by the grammar fuzzers: how an input is laid out, and the front end it
// picks. Input: one byte choosing the front end (0 GBNF, 1 JSON Schema, 2 regex,
// modulo 3), the grammar text up to a NUL byte, then bytes that drive a matcher.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "grammar/grammar.h"
#include "grammar/grammar_builder.h"

namespace llms::fuzz {

struct GrammarInput {
  uint8_t front_end = 0;
  std::string_view text;
  std::string_view drive;  // empty when there is no NUL
};

// False for an empty input.
bool split_grammar_input(const uint8_t* data, size_t size, GrammarInput* out);

// The grammar of `in.text` by the front end it picks, or the front end's refusal.
Result<Grammar> parse_grammar_input(const GrammarInput& in, const GrammarLimits& limits);

}  // namespace llms::fuzz
