// GrammarBuilder: how front ends make a Grammar. They declare rules, define each with
// an expression tree (GrammarExpr: literals, byte sets, code point classes, rule
// references, sequences, alternations, bounded or unbounded repetition) and build.
//
// Lowering turns nested alternations and repetitions into auxiliary rules. A
// repetition of an alternation is distributed into the loop rule (x* with x = a | b
// becomes L ::= a L | b L | ε) so that a matcher looping over it stays in one rule
// frame: that keeps the frames short and lets CompiledGrammar decide most tokens
// without looking at the stack below.
//
// build() rejects, with a message naming the rule: rules used but never defined,
// left recursion (also through rules that can match the empty text), rules that can
// never finish, and grammars past the size limits.
//
// Thread-safety: a builder is used by one thread; the Grammar it returns is immutable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "grammar/grammar.h"

namespace llms {

struct GrammarExpr {
  enum class Kind { kEmpty, kLiteral, kBytes, kChars, kRef, kSeq, kAlt, kRepeat };
  static constexpr int kUnbounded = -1;

  Kind kind = Kind::kEmpty;
  std::string literal;            // kLiteral: raw bytes
  ByteSet bytes;                  // kBytes
  CodepointRanges chars;          // kChars (normalized by the builder)
  int32_t rule = -1;              // kRef
  std::vector<GrammarExpr> items; // kSeq, kAlt; kRepeat: exactly one
  int min = 0;                    // kRepeat
  int max = kUnbounded;           // kRepeat

  static GrammarExpr empty() { return GrammarExpr{}; }
  static GrammarExpr lit(std::string_view bytes);
  static GrammarExpr byte_set(const ByteSet& set);
  static GrammarExpr char_ranges(CodepointRanges ranges);
  static GrammarExpr ref(int32_t rule);
  static GrammarExpr seq(std::vector<GrammarExpr> items);
  static GrammarExpr alt(std::vector<GrammarExpr> items);
  static GrammarExpr repeat(GrammarExpr item, int min, int max);
  static GrammarExpr optional(GrammarExpr item) { return repeat(std::move(item), 0, 1); }
  static GrammarExpr star(GrammarExpr item) { return repeat(std::move(item), 0, kUnbounded); }
  static GrammarExpr plus(GrammarExpr item) { return repeat(std::move(item), 1, kUnbounded); }
};

// The bounds of a one-character quantifier: * (0, unbounded), + (1, unbounded), ? (0, 1);
// false for any other character. GBNF and the regex front end share them.
inline bool simple_quantifier(char c, int* min, int* max) {
  if (c != '*' && c != '+' && c != '?') return false;
  *min = c == '+' ? 1 : 0;
  *max = c == '?' ? 1 : GrammarExpr::kUnbounded;
  return true;
}

// Limits that keep a hostile grammar from taking unbounded memory or time.
struct GrammarLimits {
  int max_repeat = 4096;          // bounds of {m,n}
  int32_t max_elements = 1 << 22; // after lowering
  int32_t max_rules = 1 << 18;
};

class GrammarBuilder {
 public:
  explicit GrammarBuilder(GrammarLimits limits = {}) : limits_(limits) {}

  // A new rule; a name already taken gets a numbered suffix. Returns its id.
  int32_t declare(std::string_view name);
  // The id of the rule declared with exactly `name`, or -1.
  int32_t find(std::string_view name) const;
  bool defined(int32_t rule) const { return bodies_[static_cast<size_t>(rule)].has_value; }
  const std::string& name(int32_t rule) const { return names_[static_cast<size_t>(rule)]; }
  // Sets the body of a declared rule (again: replaces it).
  void define(int32_t rule, GrammarExpr body);

  // Lowers every rule and checks the grammar.
  Result<Grammar> build(int32_t root);

 private:
  struct Body {
    bool has_value = false;
    GrammarExpr expr;
  };
  class Lowering;

  GrammarLimits limits_;
  std::vector<std::string> names_;
  std::vector<Body> bodies_;
  std::unordered_map<std::string, int32_t> by_name_;
};

}  // namespace llms
