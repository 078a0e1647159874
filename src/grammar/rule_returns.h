// RuleReturns: where each rule of a grammar may return to — the point after every
// reference to it, and through tail calls (a reference that ends its alternative)
// every place its caller returns to — and whether it may end the root. The
// precomputation uses it to go on above an unknown caller (grammar_stepper.h).
//
// Cost. A bounded repetition lowers to a chain of rules each tail-calling the next,
// so a repetition nested in another, (x{1,N}){1,N}, gives the inner chain's N rules
// the N return points of the outer chain each. Two things keep this linear:
//   * a rule with no reference of its own and a single tail caller returns exactly
//     where that caller does, so it shares the caller's set (a chain is one set);
//   * the remaining sets are filled by a worklist over the tail-call edges between
//     sets, each (set, point) pair recorded once (a hash set), so the cost is the
//     total size of the sets.
// That total (the "expanded size") is still quadratic for grammars whose rules each
// have several tail callers with large sets; of() refuses it above `max_points`.
//
// Thread-safety: immutable after of().
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "grammar/grammar.h"
#include "grammar/grammar_budget.h"

namespace llms {

class RuleReturns {
 public:
  // RESOURCE_EXHAUSTED when the sets hold more than `max_points` points in all (0: no
  // limit), or when `meter` stops (compile_stop_status).
  static Result<RuleReturns> of(const Grammar& g, int64_t max_points, WorkMeter& meter);

  int32_t rule_of_element(int32_t element) const { return rule_of_element_[static_cast<size_t>(element)]; }
  std::span<const int32_t> points(int32_t rule) const { return sets_[set_index(rule)]; }
  bool ends_root(int32_t rule) const { return set_ends_root_[set_index(rule)] != 0; }
  // Rules with the same set id have the same points and ends_root.
  int32_t set_of(int32_t rule) const { return set_of_rule_[static_cast<size_t>(rule)]; }
  // The points of all sets (each shared set counted once).
  int64_t total_points() const { return total_points_; }
  size_t num_sets() const { return sets_.size(); }

 private:
  size_t set_index(int32_t rule) const { return static_cast<size_t>(set_of_rule_[static_cast<size_t>(rule)]); }

  std::vector<int32_t> rule_of_element_;
  std::vector<int32_t> set_of_rule_;
  std::vector<std::vector<int32_t>> sets_;
  std::vector<uint8_t> set_ends_root_;
  int64_t total_points_ = 0;
};

}  // namespace llms
