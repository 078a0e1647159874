// Grammar: the context-free grammar every front end (GBNF, JSON Schema, regex,
// json_object) compiles to, over bytes. It is independent of any vocabulary; a
// CompiledGrammar (compiled_grammar.h) joins it with one.
//
// Layout: one flat array of elements. A rule is a list of alternatives; an alternative
// is the index of its first element, and runs until a kEnd element. Terminals consume
// one byte (kBytes: a ByteSet) or one UTF-8 code point (kChars: a CharClass, matched
// byte by byte). A "point" is where a matcher can stand: an element index and, inside
// a kChars element, the state of its UTF-8 DFA (packed as index * 256 + state).
//
// Guarantees checked by GrammarBuilder::build(): every rule reachable from the root
// can finish (derives some finite text), and no rule is left-recursive, so the
// matcher's expansion always terminates.
//
// Thread-safety: immutable after build; shared freely between threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/hash.h"
#include "grammar/char_class.h"

namespace llms {

enum class ElementKind : uint8_t {
  kBytes,  // one byte of byte_set(value)
  kChars,  // one code point of char_class(value)
  kRule,   // the rule `value`
  kEnd,    // end of an alternative
};

struct Element {
  ElementKind kind = ElementKind::kEnd;
  int32_t value = 0;
};

struct GrammarRule {
  std::string name;
  std::vector<int32_t> alternatives;  // index of each alternative's first element
};

inline int32_t make_point(int32_t element, int sub) { return element * 256 + sub; }
inline int32_t point_element(int32_t point) { return point >> 8; }
inline int point_sub(int32_t point) { return point & 255; }

class Grammar {
 public:
  int32_t root() const { return root_; }
  const std::vector<GrammarRule>& rules() const { return rules_; }
  const GrammarRule& rule(int32_t id) const { return rules_[static_cast<size_t>(id)]; }
  const Element& element(int32_t index) const { return elements_[static_cast<size_t>(index)]; }
  int32_t num_elements() const { return static_cast<int32_t>(elements_.size()); }
  const ByteSet& byte_set(int32_t id) const { return byte_sets_[static_cast<size_t>(id)]; }
  const CharClass& char_class(int32_t id) const { return char_classes_[static_cast<size_t>(id)]; }

  // Every point a matcher's stack top can hold (terminals and their DFA states).
  std::vector<int32_t> terminal_points() const;

  // Hash of the structure: equal grammars (same rules in the same order) hash equal.
  const Hash128& hash() const { return hash_; }

  // GBNF text of the grammar (auxiliary rules included), for tests and debugging.
  std::string to_gbnf() const;

 private:
  friend class GrammarBuilder;
  void finish_hash();

  std::vector<Element> elements_;
  std::vector<GrammarRule> rules_;
  std::vector<ByteSet> byte_sets_;
  std::vector<CharClass> char_classes_;
  int32_t root_ = 0;
  Hash128 hash_;
};

}  // namespace llms
