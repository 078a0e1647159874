#include "grammar/grammar_matcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace llms {
namespace {

uint64_t state_key(const MatchState& s) {
  uint64_t h = s.can_end ? 0x243F6A8885A308D3ULL : 0x13198A2E03707344ULL;
  for (const int32_t t : s.tops) h = (h ^ static_cast<uint64_t>(static_cast<uint32_t>(t))) * 0x100000001B3ULL;
  return h;
}

void set_bit(std::span<uint32_t> mask, int32_t id) { mask[static_cast<size_t>(id) >> 5] |= 1u << (id & 31); }

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), stepper_(grammar_->grammar(), pool_) {
  Entry start;
  stepper_.start(StackPool::kRoot, &start.state);
  history_.push_back(std::move(start));
}

bool GrammarMatcher::run(const MatchState& from, std::string_view bytes, MatchState* out) {
  if (bytes.empty()) return false;
  MatchState buf[2];
  const MatchState* cur = &from;
  for (size_t i = 0; i < bytes.size(); ++i) {
    MatchState& next = buf[i & 1];
    stepper_.advance(*cur, static_cast<uint8_t>(bytes[i]), &next);
    if (next.overflow) {
      failure_ = fmt::format("the text so far can be read in more than {} ways: the grammar is too ambiguous to follow",
                             GrammarStepper::kMaxStacks);
    }
    if (next.dead() || next.overflow) return false;
    cur = &next;
  }
  *out = *cur;
  return true;
}

bool GrammarMatcher::accept_token(int32_t id) {
  failure_.clear();
  const TokenVocabulary& v = grammar_->vocab();
  if (terminated() || id < 0 || id >= v.size()) return false;
  if (v.is_eog(id)) {
    if (!can_end()) return false;
    history_.push_back(Entry{current().state, true});
    return true;
  }
  return accept_bytes(v.bytes(id));
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  failure_.clear();
  if (terminated()) return false;
  const size_t mark = pool_.size();
  Entry next;
  if (!run(current().state, bytes, &next.state)) {
    pool_.truncate(mark);
    return false;
  }
  history_.push_back(std::move(next));
  return true;
}

void GrammarMatcher::rollback(int n) {
  n = std::clamp(n, 0, num_accepted());
  history_.resize(history_.size() - static_cast<size_t>(n));
}

void GrammarMatcher::fill_next_token_mask(std::span<uint32_t> mask) {
  std::fill(mask.begin(), mask.end(), 0u);
  failure_.clear();
  const Entry& e = current();
  if (e.terminated) return;
  if (const CachedMask* hit = cached(e.state)) {
    std::copy(hit->mask.begin(), hit->mask.end(), mask.begin());
    return;
  }
  const GrammarBudget& budget = grammar_->budget();
  WorkMeter meter(budget.mask_work, budget.mask_seconds);
  const size_t mark = pool_.size();
  gather(e.state, mask, meter);
  stepper_.set_meter(&meter);
  check_uncertain(e.state, candidates_, mask, meter);
  stepper_.set_meter(nullptr);
  pool_.truncate(mark);
  if (meter.stopped()) {
    std::fill(mask.begin(), mask.end(), 0u);
    failure_ = meter.status("finding the next tokens", "mask_work", "mask_seconds").message();
    return;
  }
  if (e.state.can_end) {
    for (const int32_t id : grammar_->vocab().eog_ids()) set_bit(mask, id);
  }
  remember(e.state, mask);
}

void GrammarMatcher::gather(const MatchState& s, std::span<uint32_t> mask, WorkMeter& meter) {
  candidates_.clear();
  bool check_all = false;
  for (const int32_t top : s.tops) {
    const PointTokens& t = grammar_->tokens_at(pool_.node(top).point, &meter);
    check_all = check_all || t.check_all;
    if (!t.accepted_bits.empty()) {
      for (size_t w = 0; w < mask.size(); ++w) mask[w] |= t.accepted_bits[w];
    }
    for (const int32_t id : t.accepted) set_bit(mask, id);
    if (!meter.charge()) return;
  }
  const TokenVocabulary& v = grammar_->vocab();
  if (check_all) {  // a point past its budget: every token not yet allowed is checked
    for (int32_t r = 0; r < v.num_ranked(); ++r) {
      if (!mask_has(mask, v.id_at(r))) candidates_.push_back(r);
    }
    return;
  }
  for (const int32_t top : s.tops) {
    for (const int32_t r : grammar_->tokens_at(pool_.node(top).point).uncertain_ranks) {
      if (!mask_has(mask, v.id_at(r))) candidates_.push_back(r);
    }
  }
  if (s.tops.size() > 1) {
    std::sort(candidates_.begin(), candidates_.end());
    candidates_.erase(std::unique(candidates_.begin(), candidates_.end()), candidates_.end());
  }
}

// Walks the candidates in trie order: a token reuses the states of the prefix it
// shares with the previous one, and once a prefix dies every later token that starts
// with it is refused without a step.
void GrammarMatcher::check_uncertain(const MatchState& from, std::span<const int32_t> ranks, std::span<uint32_t> mask,
                                     WorkMeter& meter) {
  if (ranks.empty() || meter.stopped()) return;
  const TokenVocabulary& v = grammar_->vocab();
  if (depth_states_.empty()) depth_states_.resize(1);
  depth_states_[0] = from;
  std::string_view prev;
  size_t valid = 0;  // depth_states_[0..valid] hold the states after prev's first bytes
  std::string_view dead;
  bool have_dead = false;
  for (const int32_t r : ranks) {
    if (!meter.charge()) return;
    const int32_t id = v.id_at(r);
    const std::string_view b = v.bytes(id);
    if (have_dead && b.size() >= dead.size() && b.compare(0, dead.size(), dead) == 0) continue;
    size_t k = 0;
    const size_t limit = std::min(valid, b.size());
    while (k < limit && prev[k] == b[k]) ++k;
    bool ok = true;
    for (size_t i = k; i < b.size(); ++i) {
      if (depth_states_.size() < i + 2) depth_states_.resize(i + 2);
      stepper_.advance(depth_states_[i], static_cast<uint8_t>(b[i]), &depth_states_[i + 1]);
      if (depth_states_[i + 1].dead() || depth_states_[i + 1].overflow) {
        dead = b.substr(0, i + 1);
        have_dead = true;
        ok = false;
        valid = i;
        break;
      }
    }
    if (ok) {
      set_bit(mask, id);
      valid = b.size();
    }
    prev = b;
  }
}

const GrammarMatcher::CachedMask* GrammarMatcher::cached(const MatchState& s) const {
  const auto it = cache_.find(state_key(s));
  if (it == cache_.end() || it->second.tops != s.tops || it->second.can_end != s.can_end) return nullptr;
  return &it->second;
}

void GrammarMatcher::remember(const MatchState& s, std::span<const uint32_t> mask) {
  if (cache_.size() >= kMaxCachedMasks) cache_.clear();
  cache_[state_key(s)] = CachedMask{s.tops, s.can_end, std::vector<uint32_t>(mask.begin(), mask.end())};
}

void masked_copy(std::span<const uint32_t> mask, std::span<const float> logits, std::span<float> out) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t n = logits.size();
  for (size_t w = 0; w < mask.size() && w * 32 < n; ++w) {
    const uint32_t bits = mask[w];
    const size_t base = w * 32;
    const size_t end = std::min(n, base + 32);
    if (bits == 0) {
      std::fill(out.begin() + static_cast<ptrdiff_t>(base), out.begin() + static_cast<ptrdiff_t>(end), kNegInf);
    } else if (bits == ~0u) {
      std::copy(logits.begin() + static_cast<ptrdiff_t>(base), logits.begin() + static_cast<ptrdiff_t>(end),
                out.begin() + static_cast<ptrdiff_t>(base));
    } else {
      for (size_t i = base; i < end; ++i) out[i] = (bits >> (i - base)) & 1 ? logits[i] : kNegInf;
    }
  }
  const size_t covered = std::min(n, mask.size() * 32);
  std::fill(out.begin() + static_cast<ptrdiff_t>(covered), out.end(), kNegInf);
}

}  // namespace llms
