// GrammarBudget: how much work a grammar may cost, so that no grammar a client sends
// can hold a thread for long: compiling it (off the engine thread), and each step of
// a generation under it (on the engine thread).
//
// Work is counted in units that each cost about the same small time (tens of
// nanoseconds): an item the pushdown closure visits, a node of the vocabulary trie
// walked, a return point recorded; an automaton state interned counts
// kStateWorkUnits (it takes a 1 KiB row of memoized transitions). Units make a
// refusal deterministic (the same grammar is refused on any machine, at any load);
// the wall-time limits are a backstop for what the units miss.
//
// Where each limit applies and what happens past it:
//   compile (CompiledGrammar::compile): the rules' return points (max_return_points,
//     the "expanded size" of nested repetitions), then the classification of the
//     start state's points, all under compile_work / compile_seconds, and `cancel`.
//     Past any of them compile() fails: RESOURCE_EXHAUSTED naming the limit, or
//     CANCELLED. (It also refuses, RESOURCE_EXHAUSTED, a start state with more
//     stacks than a matcher follows, GrammarStepper::kMaxStacks.) RESOURCE_EXHAUSTED rather than INVALID_ARGUMENT because the
//     grammar is valid and a larger budget would take it: the server answers it with
//     a 400 naming the budget (retrying the same request cannot help, so not a 429).
//   a point met later (the lazy classification, on the thread asking for a mask):
//     point_work / point_seconds. Past them the point is not classified: every token
//     at it is checked at run time against the real stacks (a correct mask, slower),
//     which is kept for the point from then on.
//   a mask (GrammarMatcher::fill_next_token_mask): the classifications it triggers
//     and its run-time checks, under mask_work / mask_seconds. Past them the matcher
//     fails: the mask is empty and failed() says why, which the engine turns into
//     finish reason "error". A generation thus never stalls the engine thread for
//     more than about one mask budget plus one point budget per step.
//
//   parse (the front ends and GrammarBuilder::build, given GrammarLimits::meter): a
//     unit per character or node parsed, per element lowered, per element of each
//     pass of the checks and of the hash, under the same compile_work /
//     compile_seconds and `cancel` (the server gives the compile what the parse left
//     of them). Past them the front end fails the same way as compile().
//
// A limit of 0 means no limit. The defaults, measured with the release build on a
// loaded 2-core machine, where one unit took 20 to 60 ns (up to 500 ns where each
// unit touches fresh memory): the heaviest point met — a JSON string of minLength
// 4000 over the 32K to 50K-token vocabularies of ../shared/tokenizer — took 3.8M
// units (0.1 s), a 20-property schema's points at most 134K, the compile of the
// issue's (x{1,4096}){1,4096} 103K. point_work leaves twice the heaviest (a point
// past it is still served, token by token); mask_work lets a mask classify such a
// point and check what is left; compile_work four times the heaviest point (a start
// point may be one).
//
// Thread-safety: a GrammarBudget is a plain value. A WorkMeter belongs to one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace llms {

struct GrammarBudget {
  static constexpr int64_t kStateWorkUnits = 256;

  int64_t max_return_points = 1 << 19;  // the return points of all rules (2 MiB)
  int64_t compile_work = 16'000'000;
  double compile_seconds = 5.0;
  int64_t point_work = 8'000'000;
  double point_seconds = 0.5;
  int64_t mask_work = 16'000'000;
  double mask_seconds = 1.0;
  // Set by the caller to abandon a compile (its client went away). Read only during
  // compile(); a compiled grammar keeps no pointer to it.
  const std::atomic<bool>* cancel = nullptr;
};

// Counts work against one limit of a GrammarBudget. charge() is cheap: it looks at
// the clock and the cancellation flag once every kCheckEvery units.
class WorkMeter {
 public:
  enum class Stop { kNone, kWork, kTime, kCancelled };

  WorkMeter(int64_t max_work, double max_seconds, const std::atomic<bool>* cancel = nullptr);
  // A meter that never stops.
  WorkMeter() : WorkMeter(0, 0) {}

  // Adds `units`; false once the meter has stopped (and from then on).
  bool charge(int64_t units = 1) {
    used_ += units;
    return used_ < next_check_ || check();
  }
  bool stopped() const { return stop_ != Stop::kNone; }
  Stop stop() const { return stop_; }
  int64_t used() const { return used_; }

  // OK; CANCELLED; or RESOURCE_EXHAUSTED saying that `what` needs more than the
  // limit, named `work_name` or `seconds_name` (GrammarBudget's field names).
  Status status(std::string_view what, std::string_view work_name, std::string_view seconds_name) const;

 private:
  static constexpr int64_t kCheckEvery = 1024;
  bool check();

  int64_t max_work_;
  double max_seconds_;
  int64_t deadline_ns_;
  const std::atomic<bool>* cancel_;
  int64_t used_ = 0;
  int64_t next_check_ = 0;
  Stop stop_ = Stop::kNone;
};

// The status of a compile its meter stopped.
inline Status compile_stop_status(const WorkMeter& m) { return m.status("compiling it", "compile_work", "compile_seconds"); }

}  // namespace llms
