#include "grammar/point_classifier.h"

#include <bit>

namespace llms {
namespace {

uint64_t state_hash(const MatchState& ms) {
  uint64_t h = (ms.reached_unknown ? 0x9E3779B97F4A7C15ULL : 0) ^ (ms.assumed_end ? 0x7F4A7C159E3779B9ULL : 0);
  for (const int32_t t : ms.tops) h = (h ^ static_cast<uint64_t>(t)) * 0x100000001B3ULL + 0x7F4A7C15;
  return h;
}

}  // namespace

PointClassifier::PointClassifier(const Grammar& g, const TokenVocabulary& v, RuleReturns returns)
    : v_(v), returns_(std::move(returns)), stepper_(g, pool_, &returns_) {}

bool PointClassifier::classify(int32_t point, WorkMeter& meter, PointTokens* out) {
  if (states_.size() > kMaxStates) reset();
  meter_ = &meter;
  stepper_.set_meter(&meter);
  MatchState start;
  stepper_.start_at(point, StackPool::kUnknown, &start);
  const int32_t s = meter.stopped() ? kAmbiguous : intern(std::move(start));
  // The accepted ids go into a bitset (ids come in trie order, not id order); a
  // sparse set is then read out of it in order.
  bits_.assign((static_cast<size_t>(v_.size()) + 31) / 32, 0);
  num_accepted_ = 0;
  *out = PointTokens{};
  if (s >= 0) walk(0, s, out);
  stepper_.set_meter(nullptr);
  meter_ = nullptr;
  if (meter.stopped()) return false;
  if (num_accepted_ * 32 > static_cast<size_t>(v_.size())) {
    out->accepted_bits = bits_;
  } else {
    out->accepted.reserve(num_accepted_);
    for (size_t w = 0; w < bits_.size(); ++w) {
      for (uint32_t x = bits_[w]; x != 0; x &= x - 1) {
        out->accepted.push_back(static_cast<int32_t>(w * 32 + static_cast<size_t>(std::countr_zero(x))));
      }
    }
  }
  return true;
}

void PointClassifier::reset() {
  pool_.truncate(0);
  states_.clear();
  trans_.clear();
  by_hash_.clear();
}

int32_t PointClassifier::intern(MatchState ms) {
  if (ms.overflow) return kAmbiguous;
  if (ms.dead()) return kDead;
  const uint64_t h = state_hash(ms);
  auto& ids = by_hash_[h];
  for (const int32_t id : ids) {
    const MatchState& o = states_[static_cast<size_t>(id)];
    if (o.tops == ms.tops && o.reached_unknown == ms.reached_unknown && o.assumed_end == ms.assumed_end) return id;
  }
  meter_->charge(GrammarBudget::kStateWorkUnits);
  const auto id = static_cast<int32_t>(states_.size());
  states_.push_back(std::move(ms));
  trans_.resize(states_.size() * 256, kUnset);
  ids.push_back(id);
  ++states_met_;
  return id;
}

int32_t PointClassifier::step(int32_t state, uint8_t byte) {
  const size_t slot = static_cast<size_t>(state) * 256 + byte;
  if (trans_[slot] != kUnset) return trans_[slot];
  MatchState next;
  stepper_.advance(states_[static_cast<size_t>(state)], byte, &next);
  if (meter_->stopped()) return kAmbiguous;  // a closure cut short: neither interned nor memoized
  const int32_t id = intern(std::move(next));
  trans_[slot] = id;  // (intern() may have grown trans_: index it again)
  return id;
}

// Tokens below trie node `node`, whose prefix leads to `state`. A token is
// accepted when an exact path (not through an assumed caller) survives its last
// byte, uncertain when only assumed paths do, refused when none does.
void PointClassifier::walk(int32_t node, int32_t state, PointTokens* out) {
  const auto& trie = v_.trie();
  if (!trie[static_cast<size_t>(node)].has_children) return;
  for (int32_t c = node + 1; c >= 0; c = trie[static_cast<size_t>(c)].next_sibling) {
    if (!meter_->charge()) return;
    const TokenVocabulary::TrieNode& cn = trie[static_cast<size_t>(c)];
    const int32_t next = step(state, cn.byte);
    if (next == kAmbiguous) {  // left to the run-time check
      meter_->charge(cn.tokens_end - cn.tokens_begin);
      for (int32_t r = cn.tokens_begin; r < cn.tokens_end; ++r) out->uncertain_ranks.push_back(r);
      continue;
    }
    if (next < 0) continue;
    const MatchState& st = states_[static_cast<size_t>(next)];
    const bool exact = st.num_exact > 0 || st.reached_unknown;
    for (int32_t r = cn.tokens_begin; r < cn.tokens_here_end; ++r) {
      if (exact) {
        const int32_t id = v_.id_at(r);
        bits_[static_cast<size_t>(id) >> 5] |= 1u << (id & 31);
        ++num_accepted_;
      } else {
        out->uncertain_ranks.push_back(r);
      }
    }
    if (!st.tops.empty()) walk(c, next, out);
  }
}

}  // namespace llms
