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
  nodes_.push_back({point, parent});
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
      case ElementKind::kChars:
        out->tops.push_back(pool_.intern(point, parent));
        break;
      case ElementKind::kRule: {
        const bool tail = g_.element(index + 1).kind == ElementKind::kEnd;
        const int32_t ret = tail ? parent : pool_.intern(make_point(index + 1, 0), parent);
        for (const int32_t alt : g_.rule(e.value).alternatives) push(make_point(alt, 0), ret);
        break;
      }
      case ElementKind::kEnd:
        if (parent == StackPool::kRoot) {
          out->can_end = true;
        } else if (parent == StackPool::kUnknown) {
          out->reached_unknown = true;
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
