#include "kv/kv_block_manager.h"

#include "base/check.h"

namespace llms {

KvBlockManager::KvBlockManager(int32_t num_blocks, int block_size, Hash128 seed, bool enable_prefix_cache)
    : pool_(num_blocks),
      block_size_(block_size),
      seed_(seed),
      enabled_(enable_prefix_cache),
      hash_of_(static_cast<size_t>(num_blocks)),
      lru_pos_(static_cast<size_t>(num_blocks)),
      in_lru_(static_cast<size_t>(num_blocks), false) {}

Hash128 KvBlockManager::chain(const Hash128& parent, std::span<const int32_t> tokens) const {
  HashBuilder h;
  h.add_pod(parent).add_span(tokens);
  return h.finish128();
}

Hash128 KvBlockManager::root(uint64_t salt) const {
  if (salt == 0) return seed_;
  HashBuilder h;
  h.add_pod(seed_).add_pod(salt);
  return h.finish128();
}

std::optional<int32_t> KvBlockManager::allocate() {
  if (auto b = pool_.allocate()) return b;
  if (lru_.empty()) return std::nullopt;
  // Evict the least recently used idle cached block; it keeps its pool reference,
  // which now belongs to the caller.
  return evict_oldest();
}

int32_t KvBlockManager::evict_oldest() {
  const int32_t b = lru_.front();
  lru_.pop_front();
  in_lru_[static_cast<size_t>(b)] = false;
  by_hash_.erase(*hash_of_[static_cast<size_t>(b)]);
  if (listener_) listener_->on_removed(*hash_of_[static_cast<size_t>(b)]);
  hash_of_[static_cast<size_t>(b)].reset();
  ++stats_.evictions;
  return b;
}

int32_t KvBlockManager::evict_idle() {
  int32_t n = 0;
  for (; !lru_.empty(); ++n) pool_.release(evict_oldest());
  return n;
}

void KvBlockManager::drop_reference(int32_t b) {
  const auto i = static_cast<size_t>(b);
  LLMS_CHECK(!in_lru_[i], "releasing an idle cached block");
  if (pool_.ref_count(b) == 1 && hash_of_[i].has_value()) {
    // Last owner gone: keep the content findable until the space is needed.
    lru_.push_back(b);
    lru_pos_[i] = std::prev(lru_.end());
    in_lru_[i] = true;
    return;
  }
  pool_.release(b);
}

int64_t KvBlockManager::begin_sequence(SequenceBlocks& seq, std::span<const int32_t> prompt) {
  LLMS_CHECK(seq.table.blocks.empty(), "begin_sequence on a sequence that holds blocks");
  if (!enabled_ || prompt.empty()) return 0;
  const int64_t B = block_size_;
  // At most the full blocks before the prompt's last token.
  const int64_t max_blocks = (static_cast<int64_t>(prompt.size()) - 1) / B;
  ++stats_.queries;
  stats_.query_tokens += max_blocks * B;
  Hash128 parent = root(seq.salt);
  for (int64_t i = 0; i < max_blocks; ++i) {
    const Hash128 h = chain(parent, prompt.subspan(static_cast<size_t>(i * B), static_cast<size_t>(B)));
    const auto it = by_hash_.find(h);
    if (it == by_hash_.end()) break;
    const int32_t b = it->second;
    const auto bi = static_cast<size_t>(b);
    if (in_lru_[bi]) {
      lru_.erase(lru_pos_[bi]);
      in_lru_[bi] = false;  // its pool reference passes to this sequence
    } else {
      pool_.retain(b);
    }
    seq.table.blocks.push_back(b);
    seq.hashes.push_back(h);
    parent = h;
  }
  seq.table.num_tokens = static_cast<int64_t>(seq.table.blocks.size()) * B;
  stats_.hit_tokens += seq.table.num_tokens;
  return seq.table.num_tokens;
}

int64_t KvBlockManager::cached_prefix_tokens(std::span<const int32_t> prompt, uint64_t salt) const {
  if (!enabled_ || prompt.empty()) return 0;
  const int64_t B = block_size_;
  const int64_t max_blocks = (static_cast<int64_t>(prompt.size()) - 1) / B;
  Hash128 parent = root(salt);
  int64_t blocks = 0;
  for (; blocks < max_blocks; ++blocks) {
    const Hash128 h = chain(parent, prompt.subspan(static_cast<size_t>(blocks * B), static_cast<size_t>(B)));
    if (!by_hash_.contains(h)) break;
    parent = h;
  }
  return blocks * B;
}

bool KvBlockManager::reserve(SequenceBlocks& seq, int64_t n) {
  const int64_t need = seq.table.num_tokens + n;
  const size_t before = seq.table.blocks.size();
  while (seq.table.capacity(block_size_) < need) {
    const auto b = allocate();
    if (!b) {
      while (seq.table.blocks.size() > before) {
        drop_reference(seq.table.blocks.back());
        seq.table.blocks.pop_back();
      }
      return false;
    }
    seq.table.blocks.push_back(*b);
  }
  seq.table.num_tokens = need;
  return true;
}

void KvBlockManager::truncate(SequenceBlocks& seq, int64_t n) {
  LLMS_CHECK(n >= 0 && n <= seq.table.num_tokens, "truncate beyond the table");
  const size_t keep = static_cast<size_t>((n + block_size_ - 1) / block_size_);
  LLMS_CHECK(seq.hashes.size() <= static_cast<size_t>(n / block_size_), "truncate into a committed block");
  while (seq.table.blocks.size() > keep) {
    drop_reference(seq.table.blocks.back());
    seq.table.blocks.pop_back();
  }
  seq.table.num_tokens = n;
}

void KvBlockManager::commit(SequenceBlocks& seq, std::span<const int32_t> tokens) {
  const size_t B = static_cast<size_t>(block_size_);
  const size_t full = std::min(tokens.size() / B, seq.table.blocks.size());
  for (size_t i = seq.hashes.size(); i < full; ++i) {
    const Hash128 parent = i == 0 ? root(seq.salt) : seq.hashes[i - 1];
    const Hash128 h = chain(parent, tokens.subspan(i * B, B));
    seq.hashes.push_back(h);
    if (!enabled_) continue;
    const int32_t b = seq.table.blocks[i];
    if (hash_of_[static_cast<size_t>(b)].has_value() || by_hash_.count(h) != 0) continue;
    by_hash_.emplace(h, b);
    hash_of_[static_cast<size_t>(b)] = h;
    if (listener_) {
      listener_->on_stored(h, i == 0 ? std::nullopt : std::optional<Hash128>(parent), tokens.subspan(i * B, B),
                           block_size_, i == 0 ? seq.salt : 0);
    }
  }
}

void KvBlockManager::release(SequenceBlocks& seq) {
  for (int32_t b : seq.table.blocks) drop_reference(b);
  seq.table.blocks.clear();
  seq.table.num_tokens = 0;
  seq.hashes.clear();
}

KvBlockManager::~KvBlockManager() {
  if (!listener_) return;
  for (const auto& [hash, block] : by_hash_) listener_->on_removed(hash);
}

}  // namespace llms
