// PointClassifier: the per-point token classification of CompiledGrammar
// (compiled_grammar.h says what the classes mean). It runs every token's bytes on a
// single stack standing at the point above an unknown caller, walking the
// vocabulary trie; automaton states are interned and their transitions memoized
// across points, so that the long runs of identical states inside string or digit
// loops cost one lookup per trie node.
//
// Work is metered (grammar_budget.h): one unit per trie node walked and per closure
// item, kStateWorkUnits per state interned. A classification its meter stops is
// abandoned (the memo keeps only complete states and transitions).
//
// Thread-safety: one thread at a time (CompiledGrammar holds its mutex around it).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_budget.h"
#include "grammar/grammar_stepper.h"
#include "grammar/token_vocabulary.h"

namespace llms {

struct PointTokens {
  std::vector<uint32_t> accepted_bits;  // a bitmask over the vocabulary, when many are accepted
  std::vector<int32_t> accepted;        // else the accepted ids
  std::vector<int32_t> uncertain_ranks; // TokenVocabulary ranks (trie order), ascending
  // Not classified (its classification ran past the budget): every token is
  // uncertain, checked at run time against the real stacks.
  bool check_all = false;
};

class PointClassifier {
 public:
  PointClassifier(const Grammar& g, const TokenVocabulary& v, RuleReturns returns);

  // The classes of the tokens at `point`; false (and `out` unspecified) when `meter`
  // stopped first.
  bool classify(int32_t point, WorkMeter& meter, PointTokens* out);

  int64_t states_met() const { return states_met_; }
  const RuleReturns& returns() const { return returns_; }

 private:
  static constexpr size_t kMaxStates = 4096;  // the memo kept between points: at most 4 MiB of transitions
  static constexpr int32_t kUnset = -2;
  static constexpr int32_t kDead = -1;
  static constexpr int32_t kAmbiguous = -3;

  void reset();
  int32_t intern(MatchState ms);
  int32_t step(int32_t state, uint8_t byte);
  void walk(int32_t node, int32_t state, PointTokens* out);

  const TokenVocabulary& v_;
  RuleReturns returns_;
  StackPool pool_;
  GrammarStepper stepper_;
  WorkMeter* meter_ = nullptr;  // during classify()
  std::vector<MatchState> states_;
  std::vector<int32_t> trans_;  // [states_ * 256]: next state, kDead, kAmbiguous or kUnset
  std::unordered_map<uint64_t, std::vector<int32_t>> by_hash_;
  int64_t states_met_ = 0;
  std::vector<uint32_t> bits_;  // classify(): the accepted ids of the point
  size_t num_accepted_ = 0;
};

}  // namespace llms
