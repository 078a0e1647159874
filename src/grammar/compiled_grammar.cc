#include "grammar/compiled_grammar.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <unordered_map>

#include "base/clock.h"
#include "grammar/grammar_stepper.h"

namespace llms {

// The classification of every token at one point at a time, walking the vocabulary
// trie. Automaton states are interned and their transitions memoized across points,
// so the long runs of identical states inside string or digit loops cost one lookup
// per trie node.
class CompiledGrammar::Precompute {
 public:
  Precompute(const Grammar& g, const TokenVocabulary& v) : v_(v), returns_(RuleReturns::of(g)), stepper_(g, pool_, &returns_) {}

  PointTokens classify(int32_t point) {
    if (states_.size() > kMaxStates) reset();
    MatchState start;
    stepper_.start_at(point, StackPool::kUnknown, &start);
    const int32_t s = intern(std::move(start));
    // The accepted ids go into a bitset (ids come in trie order, not id order); a
    // sparse set is then read out of it in order.
    bits_.assign((static_cast<size_t>(v_.size()) + 31) / 32, 0);
    num_accepted_ = 0;
    PointTokens out;
    if (s >= 0) walk(0, s, &out);
    if (num_accepted_ * 32 > static_cast<size_t>(v_.size())) {
      out.accepted_bits = bits_;
    } else {
      out.accepted.reserve(num_accepted_);
      for (size_t w = 0; w < bits_.size(); ++w) {
        for (uint32_t x = bits_[w]; x != 0; x &= x - 1) {
          out.accepted.push_back(static_cast<int32_t>(w * 32 + static_cast<size_t>(std::countr_zero(x))));
        }
      }
    }
    return out;
  }

  int64_t states_met() const { return states_met_; }

 private:
  static constexpr size_t kMaxStates = 4096;  // the memo is kept with the grammar: at most 4 MiB of transitions
  static constexpr int32_t kUnset = -2;
  static constexpr int32_t kDead = -1;
  static constexpr int32_t kAmbiguous = -3;

  void reset() {
    pool_.truncate(0);
    states_.clear();
    trans_.clear();
    by_hash_.clear();
  }

  static uint64_t state_hash(const MatchState& ms) {
    uint64_t h = (ms.reached_unknown ? 0x9E3779B97F4A7C15ULL : 0) ^ (ms.assumed_end ? 0x7F4A7C159E3779B9ULL : 0);
    for (const int32_t t : ms.tops) h = (h ^ static_cast<uint64_t>(t)) * 0x100000001B3ULL + 0x7F4A7C15;
    return h;
  }

  int32_t intern(MatchState ms) {
    if (ms.overflow) return kAmbiguous;
    if (ms.dead()) return kDead;
    const uint64_t h = state_hash(ms);
    auto& ids = by_hash_[h];
    for (const int32_t id : ids) {
      const MatchState& o = states_[static_cast<size_t>(id)];
      if (o.tops == ms.tops && o.reached_unknown == ms.reached_unknown && o.assumed_end == ms.assumed_end) return id;
    }
    const auto id = static_cast<int32_t>(states_.size());
    states_.push_back(std::move(ms));
    trans_.resize(states_.size() * 256, kUnset);
    ids.push_back(id);
    ++states_met_;
    return id;
  }

  int32_t step(int32_t state, uint8_t byte) {
    const size_t slot = static_cast<size_t>(state) * 256 + byte;
    if (trans_[slot] != kUnset) return trans_[slot];
    MatchState next;
    stepper_.advance(states_[static_cast<size_t>(state)], byte, &next);
    const int32_t id = intern(std::move(next));
    trans_[static_cast<size_t>(state) * 256 + byte] = id;  // intern() may have grown trans_
    return id;
  }

  // Tokens below trie node `node`, whose prefix leads to `state`. A token is
  // accepted when an exact path (not through an assumed caller) survives its last
  // byte, uncertain when only assumed paths do, refused when none does.
  void walk(int32_t node, int32_t state, PointTokens* out) {
    const auto& trie = v_.trie();
    if (!trie[static_cast<size_t>(node)].has_children) return;
    for (int32_t c = node + 1; c >= 0; c = trie[static_cast<size_t>(c)].next_sibling) {
      const TokenVocabulary::TrieNode& cn = trie[static_cast<size_t>(c)];
      const int32_t next = step(state, cn.byte);
      if (next == kAmbiguous) {  // left to the run-time check
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

  const TokenVocabulary& v_;
  RuleReturns returns_;
  StackPool pool_;
  GrammarStepper stepper_;
  std::vector<MatchState> states_;
  std::vector<int32_t> trans_;  // [states_ * 256]: next state, kDead, kAmbiguous or kUnset
  std::unordered_map<uint64_t, std::vector<int32_t>> by_hash_;
  int64_t states_met_ = 0;
  std::vector<uint32_t> bits_;  // classify(): the accepted ids of the point
  size_t num_accepted_ = 0;
};

CompiledGrammar::CompiledGrammar(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocabulary> v)
    : grammar_(std::move(g)), vocab_(std::move(v)) {}

CompiledGrammar::~CompiledGrammar() = default;

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::compile(std::shared_ptr<const Grammar> grammar,
                                                                        std::shared_ptr<const TokenVocabulary> vocab) {
  if (!grammar || !vocab) return invalid_argument("compile: no grammar or no vocabulary");
  const Stopwatch watch;
  std::shared_ptr<CompiledGrammar> cg(new CompiledGrammar(std::move(grammar), std::move(vocab)));
  const Grammar& g = *cg->grammar_;
  cg->first_point_.assign(static_cast<size_t>(g.num_elements()), -1);
  for (int32_t i = 0; i < g.num_elements(); ++i) {
    const Element& e = g.element(i);
    if (e.kind != ElementKind::kBytes && e.kind != ElementKind::kChars) continue;
    cg->first_point_[static_cast<size_t>(i)] = static_cast<int32_t>(cg->point_ids_.size());
    const int n = e.kind == ElementKind::kBytes ? 1 : g.char_class(e.value).num_states();
    for (int s = 0; s < n; ++s) cg->point_ids_.push_back(make_point(i, s));
  }
  const size_t n = cg->point_ids_.size();
  cg->points_.resize(n);
  cg->ready_ = std::make_unique<std::atomic<bool>[]>(n);
  for (size_t i = 0; i < n; ++i) cg->ready_[i].store(false, std::memory_order_relaxed);
  cg->pre_ = std::make_unique<Precompute>(g, *cg->vocab_);
  cg->stats_.num_points = static_cast<int32_t>(n);
  cg->stats_.seconds = watch.elapsed_s();
  return std::shared_ptr<const CompiledGrammar>(std::move(cg));
}

const PointTokens& CompiledGrammar::classify(size_t index, int32_t point) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (ready_[index].load(std::memory_order_relaxed)) return points_[index];
  const Stopwatch watch;
  PointTokens& t = points_[index];
  t = pre_->classify(point);
  stats_.num_uncertain += static_cast<int64_t>(t.uncertain_ranks.size());
  if (t.accepted_bits.empty()) {
    stats_.num_accepted += static_cast<int64_t>(t.accepted.size());
  } else {
    for (const uint32_t w : t.accepted_bits) stats_.num_accepted += std::popcount(w);
  }
  ++stats_.num_classified;
  stats_.num_states = pre_->states_met();
  stats_.classify_seconds += watch.elapsed_s();
  ready_[index].store(true, std::memory_order_release);
  return t;
}

void CompiledGrammar::classify_all() const {
  for (size_t i = 0; i < point_ids_.size(); ++i) {
    if (!ready_[i].load(std::memory_order_acquire)) classify(i, point_ids_[i]);
  }
}

CompileStats CompiledGrammar::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace llms
