#include "engine/result_cache.h"

#include "model/lora.h"

namespace llms {

int64_t CachedCompletion::bytes() const {
  int64_t b = static_cast<int64_t>(sizeof(CachedCompletion) + finish.message.size());
  for (const auto& t : tokens) {
    b += static_cast<int64_t>(sizeof(TokenEvent) + t.text.size() + t.top.size() * sizeof(TokenLogprob));
  }
  return b;
}

std::optional<Hash128> ResultCache::key_for(const Hash128& model_identity, const RequestParams& p) {
  if (!p.sampling.deterministic()) return std::nullopt;
  HashBuilder h;
  h.add_pod(model_identity).add_span(std::span<const int32_t>(p.prompt)).add_pod(p.max_tokens);
  const SamplingParams& s = p.sampling;
  h.add_pod(s.temperature).add_pod(s.top_k).add_pod(s.top_p).add_pod(s.min_p);
  h.add_pod(s.repetition_penalty).add_pod(s.presence_penalty).add_pod(s.frequency_penalty);
  h.add_pod(s.greedy() ? uint64_t{0} : *s.seed);
  h.add_pod(p.stop.size());
  for (const auto& stop : p.stop) h.add(stop);
  h.add_pod(p.ignore_eos).add_pod(p.top_logprobs).add_pod(p.report_entropy).add_pod(p.prompt_logprobs).add_pod(p.pooling).add_pod(
      p.cache_salt);
  h.add_pod(s.logit_bias.size());
  for (const auto& [id, bias] : s.logit_bias) h.add_pod(id).add_pod(bias);
  if (p.adapter) h.add("lora").add_pod(p.adapter->identity());
  if (p.grammar) h.add_pod(p.grammar->grammar().hash()).add_pod(p.grammar->vocab().hash());
  return h.finish128();
}

std::optional<CachedCompletion> ResultCache::lookup(const Hash128& key) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = index_.find(key);
  if (it == index_.end()) {
    ++stats_.misses;
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  ++stats_.hits;
  stats_.seconds_saved += it->second->value.finish.timings.e2e_s;
  return it->second->value;
}

void ResultCache::insert(const Hash128& key, CachedCompletion value) {
  const int64_t b = value.bytes();
  if (b > max_bytes_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (const auto it = index_.find(key); it != index_.end()) {
    bytes_ -= it->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
  }
  evict_to(max_bytes_ - b);
  lru_.push_front({key, std::move(value), b});
  index_.emplace(key, lru_.begin());
  bytes_ += b;
}

void ResultCache::evict_to(int64_t limit) {
  while (bytes_ > limit && !lru_.empty()) {
    bytes_ -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

void ResultCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  lru_.clear();
  index_.clear();
  bytes_ = 0;
}

ResultCacheStats ResultCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  ResultCacheStats s = stats_;
  s.entries = static_cast<int64_t>(lru_.size());
  s.bytes = bytes_;
  return s;
}

}  // namespace llms
