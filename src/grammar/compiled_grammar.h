// CompiledGrammar: a Grammar joined with a TokenVocabulary, with the per-point token
// classification that makes masks cheap.
//
// For every terminal point P, each token is put in one of three classes by running
// its bytes on a single stack standing at P above an unknown caller:
//   accepted  — some path consumes every byte without leaving P's frame (or leaves it
//               exactly at the last byte): allowed whatever the real stack holds;
//   rejected  — every path fails inside the frame: never allowed at P;
//   uncertain — every surviving path pops out of the frame with bytes left: the
//               matcher checks these against the real stack at run time.
// Most tokens fall in the first two classes, so a mask is mostly the OR of the
// precomputed sets of the current stack tops plus a check of the few uncertain
// tokens (a few percent of the vocabulary in JSON grammars). Tokens are walked in trie
// order with a memo of the automaton's transitions, so that shared prefixes and
// repeated states cost one step each.
//
// Thread-safety: immutable after compile(); shared by every matcher of the grammar on
// any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/hash.h"
#include "base/status.h"
#include "grammar/grammar.h"
#include "grammar/token_vocabulary.h"

namespace llms {

struct PointTokens {
  std::vector<uint32_t> accepted_bits;  // a bitmask over the vocabulary, when many are accepted
  std::vector<int32_t> accepted;        // else the accepted ids
  std::vector<int32_t> uncertain_ranks; // TokenVocabulary ranks (trie order), ascending
};

struct CompileStats {
  int32_t num_points = 0;
  int64_t num_accepted = 0;
  int64_t num_uncertain = 0;
  int64_t num_states = 0;  // automaton states met during the precomputation
  double seconds = 0;
};

class CompiledGrammar {
 public:
  static Result<std::shared_ptr<const CompiledGrammar>> compile(std::shared_ptr<const Grammar> grammar,
                                                                std::shared_ptr<const TokenVocabulary> vocab);

  const Grammar& grammar() const { return *grammar_; }
  const TokenVocabulary& vocab() const { return *vocab_; }
  const PointTokens& tokens_at(int32_t point) const {
    return points_[static_cast<size_t>(first_point_[static_cast<size_t>(point_element(point))] + point_sub(point))];
  }
  const CompileStats& stats() const { return stats_; }
  // Words of a mask over this vocabulary.
  size_t mask_words() const { return (static_cast<size_t>(vocab_->size()) + 31) / 32; }

 private:
  class Precompute;
  CompiledGrammar(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocabulary> v);

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::vector<int32_t> first_point_;  // per element: index of its first PointTokens, or -1
  std::vector<PointTokens> points_;
  CompileStats stats_;
};

}  // namespace llms
