#include "grammar/grammar_stepper.h"

#include <algorithm>

namespace llms {
namespace {

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

uint64_t item_key(int32_t point, int32_t parent) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(point)) << 32) | static_cast<uint32_t>(parent);
}

}  // namespace

uint64_t StackPool::key_hash(int32_t point, int32_t parent) { return mix(item_key(point, parent)); }

int32_t StackPool::intern(int32_t point, int32_t parent) {
  if (nodes_.size() >= buckets_.size() / 2) rehash(std::max<size_t>(64, buckets_.size() * 2));
  const size_t b = key_hash(point, parent) & (buckets_.size() - 1);
  for (int32_t id = buckets_[b]; id >= 0; id = chain_[static_cast<size_t>(id)]) {
    const StackNode& n = nodes_[static_cast<size_t>(id)];
    if (n.point == point && n.parent == parent) return id;
  }
  const auto id = static_cast<int32_t>(nodes_.size());
  nodes_.push_back({point, parent, parent < 0 ? parent : nodes_[static_cast<size_t>(parent)].bottom});
  chain_.push_back(buckets_[b]);
  buckets_[b] = id;
  return id;
}

void StackPool::truncate(size_t n) {
  // Nodes leave in the reverse order of their insertion, so each is the head of its
  // bucket's chain when it goes.
  while (nodes_.size() > n) {
    const StackNode& node = nodes_.back();
    const size_t b = key_hash(node.point, node.parent) & (buckets_.size() - 1);
    buckets_[b] = chain_.back();
    nodes_.pop_back();
    chain_.pop_back();
  }
}

void StackPool::rehash(size_t buckets) {
  buckets_.assign(buckets, -1);
  for (size_t id = 0; id < nodes_.size(); ++id) {
    const size_t b = key_hash(nodes_[id].point, nodes_[id].parent) & (buckets - 1);
    chain_[id] = buckets_[b];
    buckets_[b] = static_cast<int32_t>(id);
  }
}

void GrammarStepper::start(int32_t bottom, MatchState* out) {
  out->clear();
  for (const int32_t alt : g_.rule(g_.root()).alternatives) push(make_point(alt, 0), bottom);
  close(out);
}

void GrammarStepper::start_at(int32_t point, int32_t parent, MatchState* out) {
  out->clear();
  push(point, parent);
  close(out);
}

void GrammarStepper::advance(const MatchState& in, uint8_t byte, MatchState* out) {
  out->clear();
  for (const int32_t top : in.tops) {
    const StackNode& n = pool_.node(top);
    const int32_t index = point_element(n.point);
    const Element& e = g_.element(index);
    if (e.kind == ElementKind::kBytes) {
      if (g_.byte_set(e.value).has(byte)) push(make_point(index + 1, 0), n.parent);
      continue;
    }
    const int16_t next = g_.char_class(e.value).next(point_sub(n.point), byte);
    if (next == CharClass::kComplete) {
      push(make_point(index + 1, 0), n.parent);
    } else if (next != CharClass::kReject) {
      push(make_point(index, next), n.parent);
    }
  }
  close(out);
}

void GrammarStepper::push(int32_t point, int32_t parent) { work_.emplace_back(point, parent); }

// Keeps the open-addressing table at most half full; the items of the current
// close() move to the larger table.
void GrammarStepper::grow_seen() {
  const size_t n = std::max<size_t>(256, seen_keys_.size() * 2);
  std::vector<uint64_t> keys(n, 0);
  std::vector<uint32_t> stamps(n, 0);
  for (size_t i = 0; i < seen_keys_.size(); ++i) {
    if (seen_stamp_[i] != stamp_) continue;
    size_t j = mix(seen_keys_[i]) & (n - 1);
    while (stamps[j] == stamp_) j = (j + 1) & (n - 1);
    keys[j] = seen_keys_[i];
    stamps[j] = stamp_;
  }
  seen_keys_.swap(keys);
  seen_stamp_.swap(stamps);
}

bool GrammarStepper::visit(int32_t point, int32_t parent) {
  if ((seen_count_ + 1) * 2 > seen_keys_.size()) grow_seen();
  const uint64_t key = item_key(point, parent);
  const size_t mask = seen_keys_.size() - 1;
  for (size_t j = mix(key) & mask;; j = (j + 1) & mask) {
    if (seen_stamp_[j] != stamp_) {
      seen_stamp_[j] = stamp_;
      seen_keys_[j] = key;
      ++seen_count_;
      return true;
    }
    if (seen_keys_[j] == key) return false;
  }
}

void GrammarStepper::pop_below_frame(int32_t element, int32_t bottom, MatchState* out) {
  if (bottom == StackPool::kUnknown) out->reached_unknown = true;
  if (returns_ == nullptr) return;
  const int32_t rule = returns_->rule_of_element[static_cast<size_t>(element)];
  for (const int32_t p : returns_->points[static_cast<size_t>(rule)]) push(p, StackPool::kAssumed);
  if (returns_->ends_root[static_cast<size_t>(rule)]) out->assumed_end = true;
}

RuleReturns RuleReturns::of(const Grammar& g) {
  RuleReturns r;
  const size_t num_rules = g.rules().size();
  r.rule_of_element.assign(static_cast<size_t>(g.num_elements()), 0);
  r.points.assign(num_rules, {});
  r.ends_root.assign(num_rules, false);
  std::vector<std::vector<int32_t>> tail_callers(num_rules);  // rule -> rules that tail-call it
  for (size_t rule = 0; rule < num_rules; ++rule) {
    for (const int32_t start : g.rules()[rule].alternatives) {
      for (int32_t i = start;; ++i) {
        r.rule_of_element[static_cast<size_t>(i)] = static_cast<int32_t>(rule);
        const Element& e = g.element(i);
        if (e.kind == ElementKind::kEnd) break;
        if (e.kind != ElementKind::kRule) continue;
        if (g.element(i + 1).kind == ElementKind::kEnd) {
          tail_callers[static_cast<size_t>(e.value)].push_back(static_cast<int32_t>(rule));
        } else {
          r.points[static_cast<size_t>(e.value)].push_back(make_point(i + 1, 0));
        }
      }
    }
  }
  r.ends_root[static_cast<size_t>(g.root())] = true;
  // A tail call returns wherever its caller returns: propagate to a fixpoint.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t callee = 0; callee < num_rules; ++callee) {
      for (const int32_t caller : tail_callers[callee]) {
        auto& mine = r.points[callee];
        for (const int32_t p : r.points[static_cast<size_t>(caller)]) {
          if (std::find(mine.begin(), mine.end(), p) == mine.end()) {
            mine.push_back(p);
            changed = true;
          }
        }
        if (r.ends_root[static_cast<size_t>(caller)] && !r.ends_root[callee]) {
          r.ends_root[callee] = true;
          changed = true;
        }
      }
    }
  }
  return r;
}

void GrammarStepper::close(MatchState* out) {
  ++stamp_;
  if (stamp_ == 0) {  // wrapped: old stamps could collide
    std::fill(seen_stamp_.begin(), seen_stamp_.end(), 0);
    stamp_ = 1;
  }
  seen_count_ = 0;
  while (!work_.empty()) {
    const auto [point, parent] = work_.back();
    work_.pop_back();
    if (!visit(point, parent)) continue;
    const int32_t index = point_element(point);
    const Element& e = g_.element(index);
    switch (e.kind) {
      case ElementKind::kBytes:
      case ElementKind::kChars: {
        const int32_t id = pool_.intern(point, parent);
        out->tops.push_back(id);
        if (pool_.node(id).bottom != StackPool::kAssumed) ++out->num_exact;
        break;
      }
      case ElementKind::kRule: {
        const bool tail = g_.element(index + 1).kind == ElementKind::kEnd;
        const int32_t ret = tail ? parent : pool_.intern(make_point(index + 1, 0), parent);
        for (const int32_t alt : g_.rule(e.value).alternatives) push(make_point(alt, 0), ret);
        break;
      }
      case ElementKind::kEnd:
        if (parent == StackPool::kRoot) {
          out->can_end = true;
        } else if (parent == StackPool::kUnknown || parent == StackPool::kAssumed) {
          pop_below_frame(index, parent, out);
        } else {
          const StackNode& n = pool_.node(parent);
          push(n.point, n.parent);
        }
        break;
    }
  }
  std::sort(out->tops.begin(), out->tops.end());
  if (out->tops.size() > kMaxStacks) {
    out->overflow = true;
    out->tops.clear();
  }
}

}  // namespace llms
