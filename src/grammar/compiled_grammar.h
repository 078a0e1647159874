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
// tokens (a few percent of the vocabulary in JSON grammars). PointClassifier
// (point_classifier.h) does the work.
//
// compile() computes where each rule returns to (rule_returns.h) and classifies the
// points of the start state, the ones every matcher meets first; the other points
// are classified on first use (tokens_at()): a schema with long strings has
// thousands of points (every position of a bounded repetition is one), and a
// generation meets a few hundred of them. Each point's walk of the vocabulary is
// paid once per compiled grammar, by the first matcher that stands there.
//
// Budgets (grammar_budget.h): compile() runs under the budget's compile limits and
// fails past them (RESOURCE_EXHAUSTED or CANCELLED), so a grammar that compiles has
// paid its large fixed costs off the engine thread. Each later classification runs
// under the point limits; past them the point is marked check_all (every token
// checked at run time, under the matcher's mask budget). The budget is kept with the
// grammar (without its cancellation flag) for the matchers.
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
#include "grammar/grammar_budget.h"
#include "grammar/point_classifier.h"
#include "grammar/token_vocabulary.h"

namespace llms {

struct CompileStats {
  int32_t num_points = 0;
  int32_t num_classified = 0;    // points classified so far (the counts below are theirs)
  int32_t num_unclassified = 0;  // of those, points past the point budget (check_all)
  int64_t num_accepted = 0;
  int64_t num_uncertain = 0;
  int64_t num_states = 0;        // automaton states met during the classification
  int64_t return_points = 0;     // RuleReturns::total_points()
  int64_t compile_work = 0;      // work units compile() used
  int64_t classify_work = 0;     // work units of the classifications after compile()
  double seconds = 0;            // compile()
  double classify_seconds = 0;   // classifying the points so far
};

class CompiledGrammar {
 public:
  ~CompiledGrammar();
  // Errors: INVALID_ARGUMENT without a grammar or a vocabulary; RESOURCE_EXHAUSTED
  // naming the budget's limit that was passed, or for a start too ambiguous to
  // follow; CANCELLED when budget.cancel was set.
  static Result<std::shared_ptr<const CompiledGrammar>> compile(std::shared_ptr<const Grammar> grammar,
                                                                std::shared_ptr<const TokenVocabulary> vocab,
                                                                const GrammarBudget& budget = {});

  const Grammar& grammar() const { return *grammar_; }
  const std::shared_ptr<const Grammar>& grammar_ptr() const { return grammar_; }
  const TokenVocabulary& vocab() const { return *vocab_; }
  const GrammarBudget& budget() const { return budget_; }
  // The classes at `point`, classified now if no one has yet; the work that takes is
  // also charged to `charge_to` (a matcher's mask meter), if given.
  const PointTokens& tokens_at(int32_t point, WorkMeter* charge_to = nullptr) const {
    const size_t i = index_of(point);
    if (ready_[i].load(std::memory_order_acquire)) return points_[i];
    return classify(i, charge_to);
  }
  // Classifies every point now, each under the point budget (tests, benchmarks of
  // the whole precomputation, the fuzzer).
  void classify_all() const;
  CompileStats stats() const;
  // Words of a mask over this vocabulary.
  size_t mask_words() const { return (static_cast<size_t>(vocab_->size()) + 31) / 32; }

 private:
  CompiledGrammar(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocabulary> v);
  size_t index_of(int32_t point) const {
    return static_cast<size_t>(first_point_[static_cast<size_t>(point_element(point))] + point_sub(point));
  }
  void lay_out_points();
  Status classify_start(WorkMeter& meter);
  const PointTokens& classify(size_t index, WorkMeter* charge_to) const;
  // Stores the classes of point `index` (mu_ held).
  const PointTokens& store(size_t index, PointTokens t, double seconds) const;

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  GrammarBudget budget_;
  std::vector<int32_t> first_point_;  // per element: index of its first PointTokens, or -1
  std::vector<int32_t> point_ids_;    // per index: the point
  // Lazily filled; sized once in compile(), so references stay valid.
  mutable std::vector<PointTokens> points_;
  mutable std::unique_ptr<std::atomic<bool>[]> ready_;
  mutable std::mutex mu_;  // guards pre_, stats_ and filling points_
  mutable std::unique_ptr<PointClassifier> pre_;
  mutable CompileStats stats_;
};

}  // namespace llms
