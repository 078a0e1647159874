#include "grammar/grammar_checks.h"

#include <fmt/format.h>

#include <string>

namespace llms {
namespace {

bool terminal_productive(const Grammar& g, const Element& e) {
  if (e.kind == ElementKind::kBytes) return !g.byte_set(e.value).empty();
  if (e.kind == ElementKind::kChars) return !g.char_class(e.value).empty();
  return true;
}

// Charges the elements of an alternative scanned from `start` to `end` (every check
// is charged as it goes, a fixpoint taking as many passes as rules when the rules are
// declared in the wrong order); false once `meter` has stopped.
bool charge(WorkMeter* meter, int32_t start, int32_t end) { return meter == nullptr || meter->charge(end - start + 1); }
bool stopped(const WorkMeter* meter) { return meter != nullptr && meter->stopped(); }

// Least fixpoint: a rule is productive when one alternative has only productive
// elements.
std::vector<bool> productive_rules(const Grammar& g, WorkMeter* meter) {
  std::vector<bool> productive(g.rules().size(), false);
  for (bool changed = true; changed && !stopped(meter);) {
    changed = false;
    for (size_t r = 0; r < g.rules().size(); ++r) {
      if (productive[r]) continue;
      for (const int32_t start : g.rules()[r].alternatives) {
        bool ok = true;
        int32_t i = start;
        for (; ok && g.element(i).kind != ElementKind::kEnd; ++i) {
          const Element& e = g.element(i);
          ok = e.kind == ElementKind::kRule ? productive[static_cast<size_t>(e.value)] : terminal_productive(g, e);
        }
        if (!charge(meter, start, i)) return productive;
        if (ok) {
          productive[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  return productive;
}

std::vector<bool> reachable_rules(const Grammar& g, WorkMeter* meter) {
  std::vector<bool> seen(g.rules().size(), false);
  std::vector<int32_t> todo{g.root()};
  seen[static_cast<size_t>(g.root())] = true;
  while (!todo.empty()) {
    const int32_t r = todo.back();
    todo.pop_back();
    for (const int32_t start : g.rule(r).alternatives) {
      int32_t i = start;
      for (; g.element(i).kind != ElementKind::kEnd; ++i) {
        const Element& e = g.element(i);
        if (e.kind == ElementKind::kRule && !seen[static_cast<size_t>(e.value)]) {
          seen[static_cast<size_t>(e.value)] = true;
          todo.push_back(e.value);
        }
      }
      if (!charge(meter, start, i)) return seen;
    }
  }
  return seen;
}

// Rules that rule `r` can start with: those after a prefix of nullable rules.
std::vector<int32_t> leftmost_rules(const Grammar& g, int32_t r, const std::vector<bool>& nullable) {
  std::vector<int32_t> out;
  for (const int32_t start : g.rule(r).alternatives) {
    for (int32_t i = start; g.element(i).kind == ElementKind::kRule; ++i) {
      out.push_back(g.element(i).value);
      if (!nullable[static_cast<size_t>(g.element(i).value)]) break;
    }
  }
  return out;
}

Status check_left_recursion(const Grammar& g, const std::vector<bool>& nullable, const std::vector<bool>& reachable,
                            WorkMeter* meter) {
  enum Mark : uint8_t { kNew, kOnPath, kDone };
  std::vector<Mark> mark(g.rules().size(), kNew);
  std::vector<int32_t> path;
  // Iterative DFS: each frame is a rule and the index of its next successor.
  for (size_t start = 0; start < g.rules().size(); ++start) {
    if (!reachable[start] || mark[start] != kNew) continue;
    std::vector<std::pair<int32_t, std::vector<int32_t>>> stack;
    stack.emplace_back(static_cast<int32_t>(start), leftmost_rules(g, static_cast<int32_t>(start), nullable));
    mark[start] = kOnPath;
    path.assign(1, static_cast<int32_t>(start));
    while (!stack.empty()) {
      auto& [rule, next] = stack.back();
      if (next.empty()) {
        mark[static_cast<size_t>(rule)] = kDone;
        stack.pop_back();
        path.pop_back();
        continue;
      }
      const int32_t s = next.back();
      next.pop_back();
      if (mark[static_cast<size_t>(s)] == kOnPath) {
        std::string cycle;
        bool in = false;
        for (const int32_t p : path) {
          in = in || p == s;
          if (in) cycle += g.rule(p).name + " -> ";
        }
        return invalid_argument(fmt::format("the grammar is left-recursive ({}{}); rewrite it with repetition", cycle,
                                            g.rule(s).name));
      }
      if (mark[static_cast<size_t>(s)] == kNew) {
        mark[static_cast<size_t>(s)] = kOnPath;
        path.push_back(s);
        stack.emplace_back(s, leftmost_rules(g, s, nullable));
        if (!charge(meter, 0, static_cast<int32_t>(stack.back().second.size() + g.rule(s).alternatives.size()))) {
          return compile_stop_status(*meter);
        }
      }
    }
  }
  return ok_status();
}

}  // namespace

std::vector<bool> nullable_rules(const Grammar& g, WorkMeter* meter) {
  std::vector<bool> nullable(g.rules().size(), false);
  for (bool changed = true; changed && !stopped(meter);) {
    changed = false;
    for (size_t r = 0; r < g.rules().size(); ++r) {
      if (nullable[r]) continue;
      for (const int32_t start : g.rules()[r].alternatives) {
        bool all = true;
        int32_t i = start;
        for (; all && g.element(i).kind != ElementKind::kEnd; ++i) {
          const Element& e = g.element(i);
          all = e.kind == ElementKind::kRule && nullable[static_cast<size_t>(e.value)];
        }
        if (!charge(meter, start, i)) return nullable;
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

// The unproductive rule to blame: one that needs no other unproductive rule (the
// others only fail because they use it), else the first.
int32_t blame_unproductive(const Grammar& g, const std::vector<bool>& reachable, const std::vector<bool>& productive) {
  int32_t first = -1;
  for (size_t r = 0; r < g.rules().size(); ++r) {
    if (!reachable[r] || productive[r]) continue;
    if (first < 0) first = static_cast<int32_t>(r);
    bool uses_other = false;
    for (const int32_t start : g.rules()[r].alternatives) {
      for (int32_t i = start; g.element(i).kind != ElementKind::kEnd; ++i) {
        const Element& e = g.element(i);
        uses_other = uses_other || (e.kind == ElementKind::kRule && static_cast<size_t>(e.value) != r &&
                                    !productive[static_cast<size_t>(e.value)]);
      }
    }
    if (!uses_other) return static_cast<int32_t>(r);
  }
  return first;
}

Status check_grammar(const Grammar& g, WorkMeter* meter) {
  const std::vector<bool> reachable = reachable_rules(g, meter);
  const std::vector<bool> productive = stopped(meter) ? std::vector<bool>() : productive_rules(g, meter);
  if (stopped(meter)) return compile_stop_status(*meter);
  if (const int32_t bad = blame_unproductive(g, reachable, productive); bad >= 0) {
    return invalid_argument(fmt::format("rule '{}' can never finish: every alternative needs itself again or an "
                                        "empty character class",
                                        g.rule(bad).name));
  }
  for (size_t r = 0; r < g.rules().size(); ++r) {
    if (!reachable[r]) continue;
    const GrammarRule& rule = g.rules()[r];
    for (const int32_t start : rule.alternatives) {
      // An alternative whose first element can never match is never entered.
      if (!terminal_productive(g, g.element(start))) continue;
      int32_t i = start;
      for (; g.element(i).kind != ElementKind::kEnd; ++i) {
        const Element& e = g.element(i);
        const bool ok = e.kind == ElementKind::kRule ? productive[static_cast<size_t>(e.value)] : terminal_productive(g, e);
        if (!ok) {
          return invalid_argument(fmt::format("an alternative of rule '{}' can never finish (it needs {})", rule.name,
                                              e.kind == ElementKind::kRule ? "'" + g.rule(e.value).name + "'"
                                                                           : std::string("an empty character class")));
        }
      }
      if (!charge(meter, start, i)) return compile_stop_status(*meter);
    }
  }
  const std::vector<bool> nullable = nullable_rules(g, meter);
  if (stopped(meter)) return compile_stop_status(*meter);
  return check_left_recursion(g, nullable, reachable, meter);
}

}  // namespace llms
