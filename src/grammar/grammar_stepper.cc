#include "grammar/grammar_stepper.h"

#include <algorithm>

namespace llms {

uint64_t StackPool::key_hash(int32_t point, int32_t parent) { return mix64(pair_key(point, parent)); }

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

void GrammarStepper::pop_below_frame(int32_t element, int32_t bottom, MatchState* out) {
  if (bottom == StackPool::kUnknown) out->reached_unknown = true;
  if (returns_ == nullptr) return;
  const int32_t rule = returns_->rule_of_element(element);
  // Rules that share a set push the same items: once per close() is enough.
  if (!sets_pushed_.insert(static_cast<uint64_t>(returns_->set_of(rule)))) return;
  for (const int32_t p : returns_->points(rule)) push(p, StackPool::kAssumed);
  if (returns_->ends_root(rule)) out->assumed_end = true;
}

void GrammarStepper::close(MatchState* out) {
  seen_.clear();
  sets_pushed_.clear();
  while (!work_.empty()) {
    const auto [point, parent] = work_.back();
    work_.pop_back();
    if (meter_ != nullptr && !meter_->charge()) return abandon(out);
    if (!seen_.insert(pair_key(point, parent))) continue;
    const int32_t index = point_element(point);
    const Element& e = g_.element(index);
    switch (e.kind) {
      case ElementKind::kBytes:
      case ElementKind::kChars: {
        const int32_t id = pool_.intern(point, parent);
        out->tops.push_back(id);
        if (pool_.node(id).bottom != StackPool::kAssumed) ++out->num_exact;
        if (out->tops.size() > kMaxStacks) return abandon(out);  // the rest of the closure would be wasted
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
}

void GrammarStepper::abandon(MatchState* out) {
  work_.clear();
  out->tops.clear();
  out->overflow = true;
}

}  // namespace llms
