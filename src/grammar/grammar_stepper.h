// The pushdown automaton's moves, shared by the run-time matcher and the
// precomputation in CompiledGrammar.
//
// A stack is a chain of StackNodes in a StackPool: the top node stands at a terminal
// point, each node below at the point where its caller continues. Nodes are interned
// (same point and parent → same id), so equal stacks are one id and a MatchState — the
// set of stacks a prefix may have reached — is a sorted list of top ids that can key
// caches. A call whose continuation is the end of the caller's alternative reuses the
// caller's frame (no node for it), so loops written as right recursion keep the stack
// flat.
//
// The precomputation runs a stack above an unknown caller. When such a stack pops
// its last frame, the stepper can go on in every place the rule may return to
// (RuleReturns: the continuations after each reference to it), with the caller
// beneath those marked kAssumed: such paths say "some context might take this
// token", which lets the precomputation refuse the tokens no context can take.
//
// Work can be metered (grammar_budget.h): a closure past the budget stops early.
//
// Thread-safety: a StackPool and a GrammarStepper belong to one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_budget.h"
#include "grammar/key_set.h"
#include "grammar/rule_returns.h"

namespace llms {

struct StackNode {
  int32_t point = 0;
  int32_t parent = 0;
  int32_t bottom = 0;  // the sentinel at the bottom of the chain
};

class StackPool {
 public:
  // Bottoms of a stack: below the root rule (popping it ends the grammar), and an
  // unknown caller (the precomputation looks at one frame without its context).
  static constexpr int32_t kRoot = -1;
  static constexpr int32_t kUnknown = -2;
  static constexpr int32_t kAssumed = -3;  // one of the caller's possible continuations

  int32_t intern(int32_t point, int32_t parent);
  const StackNode& node(int32_t id) const { return nodes_[static_cast<size_t>(id)]; }
  size_t size() const { return nodes_.size(); }
  // Forgets the nodes made after the first `n` (they must not be referenced).
  void truncate(size_t n);

 private:
  static uint64_t key_hash(int32_t point, int32_t parent);
  void rehash(size_t buckets);

  std::vector<StackNode> nodes_;
  std::vector<int32_t> chain_;    // next node id in the same bucket, per node
  std::vector<int32_t> buckets_;  // head node id per bucket (power-of-two count)
};

struct MatchState {
  std::vector<int32_t> tops;     // sorted node ids, each at a terminal point
  int32_t num_exact = 0;         // tops not above kAssumed
  bool can_end = false;          // some path has finished the root rule
  bool reached_unknown = false;  // some path popped into the unknown caller
  bool assumed_end = false;      // an assumed continuation finished the root rule
  bool overflow = false;         // more stacks than kMaxStacks (ambiguity too high to follow), or a
                                 // metered closure stopped: unusable, the fields above are partial

  bool dead() const { return tops.empty() && !can_end && !reached_unknown && !assumed_end; }
  void clear() {
    tops.clear();
    num_exact = 0;
    can_end = reached_unknown = assumed_end = overflow = false;
  }
};

class GrammarStepper {
 public:
  static constexpr size_t kMaxStacks = 4096;

  // With `returns`, popping into kUnknown or kAssumed goes on in the assumed
  // continuations; without, it only sets reached_unknown.
  GrammarStepper(const Grammar& g, StackPool& pool, const RuleReturns* returns = nullptr)
      : g_(g), pool_(pool), returns_(returns) {}

  // Work counted from now on: one unit per closure item (met, duplicates too). When the meter stops, the
  // closure under way is abandoned and its state marked overflow (unusable).
  void set_meter(WorkMeter* meter) { meter_ = meter; }

  // The stacks at the start of the root rule, above `bottom`.
  void start(int32_t bottom, MatchState* out);
  // The stacks reached from a single stack standing at `point` above `parent`.
  void start_at(int32_t point, int32_t parent, MatchState* out);
  // Consumes `byte` on every stack of `in`. `out` must not be `in`.
  void advance(const MatchState& in, uint8_t byte, MatchState* out);

 private:
  void push(int32_t point, int32_t parent);
  // Expands the pending items until every stack top stands at a terminal.
  void close(MatchState* out);
  // Gives up the closure under way: more than kMaxStacks stacks, or the meter stopped.
  void abandon(MatchState* out);

  void pop_below_frame(int32_t element, int32_t bottom, MatchState* out);

  const Grammar& g_;
  StackPool& pool_;
  const RuleReturns* returns_;
  WorkMeter* meter_ = nullptr;
  std::vector<std::pair<int32_t, int32_t>> work_;
  KeySet seen_;         // items seen by the current close()
  KeySet sets_pushed_;  // RuleReturns sets pushed by the current close()
};

}  // namespace llms
