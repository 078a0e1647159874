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
// Points are classified on first use (tokens_at()), not in compile(): a schema with
// long strings has thousands of points (every position of a bounded repetition is
// one), and a generation meets a few hundred of them. compile() only lays the
// points out, so it costs little whatever the vocabulary; each point's walk of the
// vocabulary is paid once per compiled grammar, by the first matcher that stands there.
//
// Thread-safety: logically immutable after compile(); shared by every matcher of the
// grammar on any thread. The lazy classification takes a mutex (a classified point is
// read without it).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
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
  int32_t num_classified = 0;  // points classified so far (the counts below are theirs)
  int64_t num_accepted = 0;
  int64_t num_uncertain = 0;
  int64_t num_states = 0;      // automaton states met during the classification
  double seconds = 0;          // compile()
  double classify_seconds = 0; // classifying the points so far
};

class CompiledGrammar {
 public:
  ~CompiledGrammar();
  static Result<std::shared_ptr<const CompiledGrammar>> compile(std::shared_ptr<const Grammar> grammar,
                                                                std::shared_ptr<const TokenVocabulary> vocab);

  const Grammar& grammar() const { return *grammar_; }
  const std::shared_ptr<const Grammar>& grammar_ptr() const { return grammar_; }
  const TokenVocabulary& vocab() const { return *vocab_; }
  const PointTokens& tokens_at(int32_t point) const {
    const auto i = static_cast<size_t>(first_point_[static_cast<size_t>(point_element(point))] + point_sub(point));
    if (ready_[i].load(std::memory_order_acquire)) return points_[i];
    return classify(i, point);
  }
  // Classifies every point now (tests, benchmarks of the whole precomputation).
  void classify_all() const;
  CompileStats stats() const;
  // Words of a mask over this vocabulary.
  size_t mask_words() const { return (static_cast<size_t>(vocab_->size()) + 31) / 32; }

 private:
  class Precompute;
  CompiledGrammar(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocabulary> v);
  const PointTokens& classify(size_t index, int32_t point) const;

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::vector<int32_t> first_point_;  // per element: index of its first PointTokens, or -1
  std::vector<int32_t> point_ids_;    // per index: the point
  // Lazily filled; sized once in compile(), so references stay valid.
  mutable std::vector<PointTokens> points_;
  mutable std::unique_ptr<std::atomic<bool>[]> ready_;
  mutable std::mutex mu_;                       // guards pre_, stats_ and filling points_
  mutable std::unique_ptr<Precompute> pre_;
  mutable CompileStats stats_;
};

}  // namespace llms
