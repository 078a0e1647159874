// GrammarBuilder: how front ends make a Grammar. They declare rules, define each with
// an expression tree (GrammarExpr: literals, byte sets, code point classes, rule
// references, sequences, alternations, bounded or unbounded repetition) and build.
//
// Lowering turns nested alternations and repetitions into auxiliary rules. A
// repetition of an alternation is distributed into the loop rule (x* with x = a | b
// becomes L ::= a L | b L | ε) so that a matcher looping over it stays in one rule
// frame: that keeps the frames short and lets CompiledGrammar decide most tokens
// without looking at the stack below. A bounded repetition of a large item (more
// than kInlineLimit elements) refers to the item's rule instead of copying it into
// each of its up to max_repeat rules.
//
// A repetition of a repetition whose counts form one interval is lowered as one
// repetition ((x{a1,a2}){b1,b2} = x{b1*a1, b2*a2} when a1 <= b1*(a2-a1)+1): nested,
// a text of n items splits into iterations in ~n^2 ways, every one a stack the
// matcher follows, and past GrammarStepper::kMaxStacks it can no longer follow the
// text its masks allowed. A count past max_repeat (only merging makes one) lowers
// in O(sqrt(n)) elements with about four readings of any prefix:
//   x{0,n} = B{0,q-1} x{0,a-1} | B{q} x{0,r}, with B = x^a, a = ceil(sqrt(n)), n = qa + r.
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
#include "grammar/grammar_budget.h"

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
  int max_repeat = 4096;          // bounds of each {m,n} as written
  int32_t max_elements = 1 << 22; // after lowering
  int32_t max_rules = 1 << 18;
  // Charged by the front ends (about one unit per character or expression node they
  // make) and by build() (per element lowered, per element each check visits, the
  // hash); once it stops they fail with compile_stop_status() (RESOURCE_EXHAUSTED
  // naming compile_work or compile_seconds, or CANCELLED). Null: unmetered. The
  // server passes a meter of its compile budget, so that parsing a hostile text is
  // bounded in work and time and stops when the client goes.
  WorkMeter* meter = nullptr;
};

// The copies of an item nested repetitions allow at most once merged
// ((x{0,4096}){0,4096} = x{0,16777216}); more is refused.
inline constexpr int64_t kMaxMergedRepeat = int64_t{1} << 24;

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

  // Charges the limits' meter (front ends: about a unit per node they make); false
  // once it has stopped, and stop_status() then says why.
  bool charge(int64_t units = 1) { return limits_.meter == nullptr || limits_.meter->charge(units); }
  Status stop_status() const { return compile_stop_status(*limits_.meter); }
  WorkMeter* meter() const { return limits_.meter; }

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
