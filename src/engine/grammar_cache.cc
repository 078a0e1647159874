#include "engine/grammar_cache.h"

#include <algorithm>
#include <limits>

namespace llms {

std::shared_ptr<const TokenVocabulary> GrammarCache::vocabulary() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!vocab_) vocab_ = std::make_shared<const TokenVocabulary>(TokenVocabulary::from_tokenizer(tok_));
  return vocab_;
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCache::compile(std::shared_ptr<const Grammar> g,
                                                                     const GrammarBudget& budget) {
  if (!g) return invalid_argument("no grammar");
  const Hash128 key = g->hash();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++stats_.hits;
      return it->second->value;
    }
    ++stats_.misses;
  }
  // Two threads may compile the same grammar at once; both results are valid.
  LLMS_ASSIGN_OR_RETURN(auto compiled, CompiledGrammar::compile(std::move(g), vocabulary(), budget));
  std::lock_guard<std::mutex> lock(mu_);
  if (index_.count(key) == 0 && max_entries_ > 0) {
    lru_.push_front(Entry{key, compiled});
    index_.emplace(key, lru_.begin());
    while (lru_.size() > max_entries_) {
      index_.erase(lru_.back().key);
      lru_.pop_back();
    }
  }
  stats_.entries = static_cast<int64_t>(lru_.size());
  return compiled;
}

GrammarCacheStats GrammarCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

bool constrain_logits(GrammarMatcher& m, std::span<const float> logits, bool ignore_eos, std::vector<uint32_t>* mask,
                      std::vector<float>* out) {
  mask->resize(m.mask_words());
  m.fill_next_token_mask(*mask);
  if (ignore_eos) {
    for (const int32_t id : m.grammar().vocab().eog_ids()) (*mask)[static_cast<size_t>(id) >> 5] &= ~(1u << (id & 31));
  }
  out->resize(logits.size());
  masked_copy(*mask, logits, *out);
  return std::any_of(mask->begin(), mask->end(), [](uint32_t w) { return w != 0; });
}

}  // namespace llms
