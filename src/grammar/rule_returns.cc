#include "grammar/rule_returns.h"

#include <fmt/format.h>

#include <algorithm>

#include "grammar/key_set.h"

namespace llms {
namespace {

struct Calls {
  std::vector<std::vector<int32_t>> own;          // per rule: the points after its non-tail references
  std::vector<std::pair<int32_t, int32_t>> tail;  // distinct (callee, caller) tail calls, callee != caller
};

Calls scan_calls(const Grammar& g, std::vector<int32_t>* rule_of_element, WorkMeter& meter) {
  Calls c;
  c.own.resize(g.rules().size());
  rule_of_element->assign(static_cast<size_t>(g.num_elements()), 0);
  for (size_t rule = 0; rule < g.rules().size(); ++rule) {
    const auto self = static_cast<int32_t>(rule);
    for (const int32_t start : g.rules()[rule].alternatives) {
      for (int32_t i = start;; ++i) {
        meter.charge();
        (*rule_of_element)[static_cast<size_t>(i)] = self;
        const Element& e = g.element(i);
        if (e.kind == ElementKind::kEnd) break;
        if (e.kind != ElementKind::kRule) continue;
        if (g.element(i + 1).kind != ElementKind::kEnd) {
          c.own[static_cast<size_t>(e.value)].push_back(make_point(i + 1, 0));
        } else if (e.value != self) {
          c.tail.emplace_back(e.value, self);
        }
      }
    }
  }
  std::sort(c.tail.begin(), c.tail.end());
  c.tail.erase(std::unique(c.tail.begin(), c.tail.end()), c.tail.end());
  return c;
}

// Per rule: the rule whose set it shares — its only tail caller's, when it has no
// reference of its own (followed to the end of such chains) — else itself. The root
// keeps its own: it also returns to the end of the text.
std::vector<int32_t> representatives(const Grammar& g, const Calls& c) {
  const size_t n = g.rules().size();
  std::vector<int32_t> single(n, -1);  // the only tail caller; -1 none, -2 several
  for (const auto& [callee, caller] : c.tail) {
    int32_t& s = single[static_cast<size_t>(callee)];
    s = s == -1 ? caller : -2;
  }
  auto aliased = [&](int32_t r) {
    return r != g.root() && c.own[static_cast<size_t>(r)].empty() && single[static_cast<size_t>(r)] >= 0;
  };
  std::vector<int32_t> rep(n, -1);
  std::vector<uint8_t> on_path(n, 0);
  std::vector<int32_t> path;
  for (size_t r = 0; r < n; ++r) {
    path.clear();
    auto x = static_cast<int32_t>(r);
    while (rep[static_cast<size_t>(x)] < 0 && aliased(x) && !on_path[static_cast<size_t>(x)]) {
      on_path[static_cast<size_t>(x)] = 1;
      path.push_back(x);
      x = single[static_cast<size_t>(x)];
    }
    // x has its own set, or closes a cycle of rules that only tail-call each other
    // (no caller outside it: unreachable, any set will do).
    if (rep[static_cast<size_t>(x)] < 0) rep[static_cast<size_t>(x)] = x;
    for (const int32_t p : path) {
      on_path[static_cast<size_t>(p)] = 0;
      if (rep[static_cast<size_t>(p)] < 0) rep[static_cast<size_t>(p)] = rep[static_cast<size_t>(x)];
    }
  }
  return rep;
}

// Edges from a caller's set to its tail callee's set, as adjacency lists.
struct SetGraph {
  std::vector<size_t> offsets;  // [num_sets + 1]
  std::vector<int32_t> targets;

  std::span<const int32_t> from(int32_t set) const {
    const auto s = static_cast<size_t>(set);
    return std::span<const int32_t>(targets).subspan(offsets[s], offsets[s + 1] - offsets[s]);
  }
};

SetGraph set_graph(const Calls& c, const std::vector<int32_t>& set_of_rule, size_t num_sets) {
  std::vector<std::pair<int32_t, int32_t>> edges;
  for (const auto& [callee, caller] : c.tail) {
    const int32_t from = set_of_rule[static_cast<size_t>(caller)], to = set_of_rule[static_cast<size_t>(callee)];
    if (from != to) edges.emplace_back(from, to);
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  SetGraph graph;
  graph.offsets.assign(num_sets + 1, 0);
  for (const auto& [from, to] : edges) ++graph.offsets[static_cast<size_t>(from) + 1];
  for (size_t s = 0; s < num_sets; ++s) graph.offsets[s + 1] += graph.offsets[s];
  for (const auto& [from, to] : edges) graph.targets.push_back(to);  // edges are sorted by `from`
  return graph;
}

// The sets that may end the root: the root's, and those its set flows to.
std::vector<uint8_t> ends_root_sets(const SetGraph& graph, int32_t root_set, size_t num_sets) {
  std::vector<uint8_t> ends(num_sets, 0);
  std::vector<int32_t> todo{root_set};
  ends[static_cast<size_t>(root_set)] = 1;
  while (!todo.empty()) {
    const int32_t s = todo.back();
    todo.pop_back();
    for (const int32_t t : graph.from(s)) {
      if (ends[static_cast<size_t>(t)] == 0) {
        ends[static_cast<size_t>(t)] = 1;
        todo.push_back(t);
      }
    }
  }
  return ends;
}

Status too_many_points(int64_t max_points) {
  return resource_exhausted(fmt::format(
      "the grammar is too complex: its nested repetitions make more than {} return points (budget "
      "max_return_points); lower their bounds",
      max_points));
}

}  // namespace

Result<RuleReturns> RuleReturns::of(const Grammar& g, int64_t max_points, WorkMeter& meter) {
  RuleReturns r;
  const Calls c = scan_calls(g, &r.rule_of_element_, meter);
  if (meter.stopped()) return compile_stop_status(meter);
  const std::vector<int32_t> rep = representatives(g, c);
  const size_t n = g.rules().size();
  r.set_of_rule_.assign(n, -1);
  size_t num_sets = 0;
  for (size_t i = 0; i < n; ++i) {
    if (rep[i] == static_cast<int32_t>(i)) r.set_of_rule_[i] = static_cast<int32_t>(num_sets++);
  }
  for (size_t i = 0; i < n; ++i) r.set_of_rule_[i] = r.set_of_rule_[static_cast<size_t>(rep[i])];
  r.sets_.resize(num_sets);
  const SetGraph graph = set_graph(c, r.set_of_rule_, num_sets);

  // A set's points flow to the sets of its tail callees; each (set, point) once.
  KeySet seen;
  std::vector<std::pair<int32_t, int32_t>> work;
  auto add = [&](int32_t set, int32_t point) {
    if (!seen.insert(pair_key(set, point))) return;
    r.sets_[static_cast<size_t>(set)].push_back(point);
    ++r.total_points_;
    work.emplace_back(set, point);
  };
  for (size_t rule = 0; rule < n; ++rule) {
    for (const int32_t p : c.own[rule]) add(r.set_of_rule_[rule], p);
  }
  while (!work.empty()) {
    if (max_points > 0 && r.total_points_ > max_points) return too_many_points(max_points);
    const auto [set, point] = work.back();
    work.pop_back();
    const std::span<const int32_t> to = graph.from(set);
    if (!meter.charge(1 + static_cast<int64_t>(to.size()))) return compile_stop_status(meter);
    for (const int32_t t : to) add(t, point);
  }
  if (max_points > 0 && r.total_points_ > max_points) return too_many_points(max_points);

  r.set_ends_root_ = ends_root_sets(graph, r.set_of_rule_[static_cast<size_t>(g.root())], num_sets);
  return r;
}

}  // namespace llms
